package dev.dlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

/** A lock not acquired says how long its acquisition was allowed to wait (a web answer's Retry-After is made of it). */
class LockNotAcquiredWaitTimeTest extends EngineTestSupport {

    @Test
    void aTimeoutCarriesTheRequestsWaitTimeOrTheManagersDefault() throws Exception {
        LockManager holder = manager();
        LockManager caller = manager(store, b -> b.waitTime(Duration.ofMillis(40)));
        try (LockHandle held = holder.acquire(key, Duration.ZERO)) {
            assertThatThrownBy(() -> caller.acquire(LockRequest.builder(key).waitTime(Duration.ofMillis(60)).build()))
                    .isInstanceOfSatisfying(LockNotAcquiredException.class, e -> {
                        assertThat(e.reason()).isEqualTo(LockNotAcquiredException.Reason.TIMEOUT);
                        assertThat(e.waitTime()).isEqualTo(Duration.ofMillis(60));
                    });
            assertThatThrownBy(() -> caller.acquire(LockRequest.builder(key).build()))
                    .isInstanceOfSatisfying(LockNotAcquiredException.class, e -> assertThat(e.waitTime()).isEqualTo(Duration.ofMillis(40)));
            assertThatThrownBy(() -> caller.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).build()))
                    .isInstanceOfSatisfying(LockNotAcquiredException.class, e -> assertThat(e.waitTime()).isZero());

            Throwable async = catchThrowable(() -> caller.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofMillis(50)).build())
                    .get(10, TimeUnit.SECONDS));
            assertThat(async.getCause()).isInstanceOfSatisfying(LockNotAcquiredException.class,
                    e -> assertThat(e.waitTime()).isEqualTo(Duration.ofMillis(50)));
            assertThat(held.isHeld()).isTrue();
        }
    }

    /** A single try says it tried once, not that it "waited" the store's round trip (was: "after waiting 14 ms"). */
    @Test
    void aSingleTrySaysItTriedOnceAndAWaitSaysHowLong() {
        LockManager holder = manager();
        LockManager caller = manager();
        try (LockHandle held = holder.acquire(key, Duration.ZERO)) {
            assertThatThrownBy(() -> caller.acquire(key, Duration.ZERO)).isInstanceOf(LockNotAcquiredException.class)
                    .hasMessage("Lock '" + LockRequest.DEFAULT_NAME + "' on key '" + key
                            + "' not acquired: held by another owner (tried once: the wait time is 0)");
            assertThatThrownBy(() -> caller.acquire(key, Duration.ofMillis(30))).isInstanceOf(LockNotAcquiredException.class)
                    .hasMessageContaining("still held by another owner after waiting ").hasMessageEndingWith(" ms");
            assertThat(held.isHeld()).isTrue();
        }
    }

    @Test
    void anExceptionMadeElsewhereDoesNotKnowIt() {
        assertThat(new LockNotAcquiredException("orders", "orders:1", LockNotAcquiredException.Reason.TIMEOUT, Duration.ZERO)
                .waitTime()).isNull();
    }
}
