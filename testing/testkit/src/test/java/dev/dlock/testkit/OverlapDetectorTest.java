package dev.dlock.testkit;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The detector's counts, and the reset a detector shared by several tests (a Spring bean) needs between them. */
class OverlapDetectorTest {

    @Test
    void countsOverlapsAndResetsToZero() {
        OverlapDetector detector = new OverlapDetector();
        detector.enter();
        detector.enter();
        detector.incrementUnsafely();
        detector.exit();
        detector.exit();
        assertThat(detector.overlaps()).isEqualTo(1);
        assertThat(detector.maxInside()).isEqualTo(2);
        assertThat(detector.counter()).isEqualTo(1);

        detector.reset();

        assertThat(detector.overlaps()).isZero();
        assertThat(detector.maxInside()).isZero();
        assertThat(detector.counter()).isZero();
    }

    /** A caller still inside (a thread a previous test left running) would spoil the next test's counts: say so. */
    @Test
    void resetWhileACallerIsInsideFails() {
        OverlapDetector detector = new OverlapDetector();
        detector.enter();
        assertThatThrownBy(detector::reset).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("1 caller is still inside");
        detector.exit();
        detector.reset();
        assertThat(detector.overlaps()).isZero();
    }
}
