package dev.dlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

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
