package dev.dlock.core;

import java.time.Duration;

import org.junit.jupiter.api.Test;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.FencingTokens;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Fencing tokens across a change of lock store: the in-memory store's tokens start at the clock floor that Redis's and
 * the JDBC store's start at, and a guard's refusal of a counter's token against a clock's one names a change of store
 * as the likely cause, not only a lost lock.
 */
class ClockFloorTest {

    @Test
    void inMemoryTokensStartAtTheClockInMicroseconds() {
        long before = FencingTokens.clockFloorMicros();
        try (InMemoryLockBackend store = new InMemoryLockBackend(); LockManager locks = LockManager.builder(store).build()) {
            long first;
            try (LockHandle lock = locks.acquire("clock-floor", Duration.ZERO)) {
                first = lock.fencingToken();
            }
            assertThat(first).as("the first token against the clock in µs before the store started").isGreaterThanOrEqualTo(before);
            try (LockHandle lock = locks.acquire("clock-floor", Duration.ZERO)) {
                assertThat(lock.fencingToken()).isGreaterThan(first);
            }
        }
    }

    @Test
    void aCounterTokenRefusedAgainstAClockTokenNamesAChangeOfStore() {
        long redisToken = 1_795_000_000_000_000L;
        assertThat(new StaleFencingTokenException("fence row 'account:1'", 12, redisToken))
                .hasMessageContaining("offered 12, but " + redisToken + " was already accepted")
                .hasMessageContaining("the lock store was changed")
                .hasMessageContaining("docs/fencing.md");
    }

    @Test
    void aRefusalBetweenTokensOfOneScaleIsALostLockOnly() {
        assertThat(new StaleFencingTokenException("r", 1_795_000_000_000_000L, 1_795_000_000_000_001L))
                .hasMessageNotContaining("lock store was changed");
        assertThat(new StaleFencingTokenException("r", 5, 7L)).hasMessageNotContaining("lock store was changed");
        assertThat(new StaleFencingTokenException("r", 5, null)).hasMessageNotContaining("lock store was changed");
    }
}
