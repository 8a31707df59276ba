package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.HashSet;
import java.util.Set;

import org.junit.jupiter.api.Test;

/** Owner tokens: unique, and naming the instance and the holder as they are when the token is made. */
class OwnerTokensTest {

    @Test
    void theHolderPartFollowsTheThreadsCurrentNameAndEveryTokenIsUnique() {
        OwnerTokens tokens = new OwnerTokens("host-1");
        Thread me = Thread.currentThread();
        String name = me.getName();
        Set<String> issued = new HashSet<>();
        try {
            me.setName("worker/1 ä");
            String first = tokens.next();
            assertThat(first).startsWith("host-1/worker_1__/");
            me.setName("renamed");
            String second = tokens.next();
            assertThat(second).startsWith("host-1/renamed/");
            assertThat(tokens.next("async:renamed")).startsWith("host-1/async:renamed/");
            for (int i = 0; i < 1_000; i++) {
                issued.add(tokens.next());
            }
        } finally {
            me.setName(name);
        }
        assertThat(issued).hasSize(1_000);
    }
}
