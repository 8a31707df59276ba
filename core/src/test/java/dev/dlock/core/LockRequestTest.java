package dev.dlock.core;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.catchThrowable;

class LockRequestTest {

    @Test
    void defaultsAreAWatchdogLeaseAndTheManagersWaitTime() {
        LockRequest request = LockRequest.builder("k").build();
        assertThat(request.name()).isEqualTo(LockRequest.DEFAULT_NAME);
        assertThat(request.leaseTime()).isNull();
        assertThat(request.waitTime()).isNull();
        assertThat(request.abortCheckInterval()).isEqualTo(Duration.ofMillis(100));
    }

    @Test
    void invalidSettingsNameTheSetting() {
        assertThatThrownBy(() -> LockRequest.builder("k").waitTime(Duration.ofMillis(-1))).hasMessageContaining("waitTime");
        assertThatThrownBy(() -> LockRequest.builder("k").leaseTime(Duration.ZERO)).hasMessageContaining("leaseTime");
        assertThatThrownBy(() -> LockRequest.builder("k").abortCheckInterval(Duration.ZERO)).hasMessageContaining("abortCheckInterval");
        assertThatThrownBy(() -> LockRequest.builder("k").name(" ")).hasMessageContaining("name");
    }

    /**
     * A fixed lease (the request's, the annotation's) and the watchdog-managed one (the manager's, dlock.lease-time)
     * follow one rule, kept in one place: the same value is refused by both, with the same reason.
     */
    @Test
    void fixedAndWatchdogLeasesFollowOneRule() {
        LockManager.Builder manager = LockManager.builder(new InMemoryLockBackend());
        for (Duration tooShort : new Duration[] {Duration.ofMillis(10), Duration.ofMillis(29), Duration.ZERO}) {
            Throwable fixed = catchThrowable(() -> LockRequest.builder("k").leaseTime(tooShort));
            Throwable watched = catchThrowable(() -> manager.leaseTime(tooShort));
            assertThat(fixed).as("fixed lease of %s", tooShort).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("at least 30 ms");
            assertThat(watched).as("watchdog lease of %s", tooShort).isInstanceOf(IllegalArgumentException.class)
                    .hasMessage(fixed.getMessage());
        }
        assertThat(LockRequest.builder("k").leaseTime(Duration.ofMillis(30)).build().leaseTime()).isEqualTo(Duration.ofMillis(30));
        assertThat(manager.leaseTime(Duration.ofMillis(30))).isSameAs(manager);
    }

    /** Builders that keep an interval for their requests (the aspect support) check it with the request's own rule. */
    @Test
    void theAbortCheckIntervalRuleIsOpenToOtherBuilders() {
        assertThat(LockRequest.validAbortCheckInterval(Duration.ofMillis(1))).isEqualTo(Duration.ofMillis(1));
        assertThatThrownBy(() -> LockRequest.validAbortCheckInterval(Duration.ofMillis(-1)))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("abortCheckInterval must be positive");
        assertThatThrownBy(() -> LockRequest.validAbortCheckInterval(Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void keysAreBoundedInUtf8Bytes() {
        assertThat(LockManager.validKey("ü".repeat(512))).hasSize(512);
        assertThatThrownBy(() -> LockManager.validKey("ü".repeat(513))).isInstanceOf(LockKeyException.class)
                .hasMessageContaining("1026 bytes");
        assertThatThrownBy(() -> LockManager.validKey(null)).isInstanceOf(LockKeyException.class);
        assertThatThrownBy(() -> LockManager.validKey("\t ")).isInstanceOf(LockKeyException.class);
    }
}
