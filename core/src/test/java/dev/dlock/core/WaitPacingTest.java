package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * How long a waiter pauses between questions to the store: never past the holder's lease or the wait, and with
 * notices flowing never longer than the notice re-check, because a notice can be lost without anyone noticing.
 */
class WaitPacingTest {

    private static final LockRequest REQUEST = LockRequest.builder("paced").build();
    private static final long MINUTE = TimeUnit.MINUTES.toNanos(1);

    @Test
    void withNoticesFlowingAWaiterAsksAgainWithinTheRecheckHoweverLongTheHoldersLease() {
        long pause = new WaitPacing().nextPauseNanos(true, MINUTE, 2 * MINUTE, REQUEST);

        assertThat(Duration.ofNanos(pause)).as("pause with notices flowing and 60 s left on the holder's lease")
                .isLessThanOrEqualTo(Duration.ofSeconds(1));
    }

    @Test
    void withNoticesFlowingAShortLeaseIsWaitedOutAndTheWaitIsNeverExceeded() {
        WaitPacing pacing = new WaitPacing();

        assertThat(pacing.nextPauseNanos(true, TimeUnit.MILLISECONDS.toNanos(200), MINUTE, REQUEST))
                .as("until the lease ends, plus a millisecond").isEqualTo(TimeUnit.MILLISECONDS.toNanos(201));
        assertThat(pacing.nextPauseNanos(true, MINUTE, TimeUnit.MILLISECONDS.toNanos(50), REQUEST))
                .as("no longer than the wait").isEqualTo(TimeUnit.MILLISECONDS.toNanos(50));
    }

    @Test
    void withoutNoticesTheBackoffNeverOutlastsTheHoldersLease() {
        WaitPacing pacing = new WaitPacing();

        for (int attempt = 0; attempt < 20; attempt++) {
            assertThat(pacing.nextPauseNanos(false, MINUTE, 2 * MINUTE, REQUEST)).isBetween(1L, TimeUnit.MILLISECONDS.toNanos(500));
        }
        assertThat(pacing.nextPauseNanos(false, TimeUnit.MILLISECONDS.toNanos(2), MINUTE, REQUEST))
                .isLessThanOrEqualTo(TimeUnit.MILLISECONDS.toNanos(3));
    }
}
