package dev.dlock.aspect;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class LockDurationsTest {

    @Test
    void parsesTheShortFormsAndIso8601() {
        assertThat(LockDurations.parse("0")).isEqualTo(Duration.ZERO);
        assertThat(LockDurations.parse("500ms")).isEqualTo(Duration.ofMillis(500));
        assertThat(LockDurations.parse("5s")).isEqualTo(Duration.ofSeconds(5));
        assertThat(LockDurations.parse("2m")).isEqualTo(Duration.ofMinutes(2));
        assertThat(LockDurations.parse("1h")).isEqualTo(Duration.ofHours(1));
        assertThat(LockDurations.parse("PT5S")).isEqualTo(Duration.ofSeconds(5));
        assertThat(LockDurations.parse(" 250 ")).isEqualTo(Duration.ofMillis(250));
    }

    @Test
    void rejectsAnythingElseNamingTheAcceptedForms() {
        assertThatThrownBy(() -> LockDurations.parse("soon")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'soon' is not a duration").hasMessageContaining("500ms");
        assertThatThrownBy(() -> LockDurations.parse("PT-5S")).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> LockDurations.parse("-5s")).isInstanceOf(IllegalArgumentException.class);
    }
}
