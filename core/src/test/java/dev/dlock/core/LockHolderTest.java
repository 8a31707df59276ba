package dev.dlock.core;

import dev.dlock.core.spi.StoredHolder;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** A holder printed (a log line, a listener's message, a diagnostic page) names who holds the key, never its owner token. */
class LockHolderTest {

    @Test
    void toStringNamesTheHolderButNeverShowsTheOwnerToken() {
        Instant takenAt = Instant.parse("2026-11-24T22:07:31.204Z");
        String owner = "shop-eu-1/invoice-worker-3/" + Long.toString(takenAt.toEpochMilli(), 36) + "/7f3a9c:42";

        LockHolder holder = LockHolder.of(new StoredHolder(owner, 28_700));
        String shown = holder.toString();

        assertThat(holder.owner()).as("the owner token is still there for the engine").isEqualTo(owner);
        assertThat(shown).contains("shop-eu-1", "invoice-worker-3", takenAt.toString(), Duration.ofMillis(28_700).toString())
                .doesNotContain(owner).doesNotContain("7f3a9c");
    }

    @Test
    void aTokenOfAnotherFormatIsNotShownEither() {
        LockHolder holder = LockHolder.of(new StoredHolder("legacy-owner-token-91c2", StoredHolder.NO_EXPIRY));

        assertThat(holder.toString()).contains("unknown").doesNotContain("legacy-owner-token-91c2");
    }
}
