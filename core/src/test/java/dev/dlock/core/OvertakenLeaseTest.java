package dev.dlock.core;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A holder whose fixed lease ran out in the in-memory store (its clock moved ahead, as a test moves it) and whose key
 * another application then took and released is told at release that the lease was lost, although the engine's own
 * clock still thinks it lives: only the store's answer can tell it.
 */
class OvertakenLeaseTest extends EngineTestSupport {

    @ParameterizedTest(name = "{0} holder, overtaken by {1}")
    @CsvSource({"EXCLUSIVE, EXCLUSIVE", "FAIR, FAIR", "WRITE, WRITE", "WRITE, READ"})
    void aHolderOvertakenAfterItsFixedLeaseRanOutInTheStoreGetsLockLostAtRelease(LockKind.Mode held, LockKind.Mode taker) {
        LockHandle holder = manager().acquire(request(held));
        skipStoreTime(Duration.ofSeconds(31));
        manager().acquire(request(taker)).close();
        assertThatThrownBy(holder::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);
    }

    private LockRequest request(LockKind.Mode mode) {
        return LockRequest.builder(key).kind(LockKind.of(mode)).leaseTime(Duration.ofSeconds(30)).waitTime(Duration.ZERO).build();
    }
}
