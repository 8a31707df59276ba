package dev.dlock.testkit.faults;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Set;

/**
 * What every store's fault-suite test asserts on its report: what users rely on must hold whatever the
 * faults — no overlap gets past the fencing check, no holder loses its lease without being told,
 * nothing stays locked, every fault was injected, and the workload recovered after each one.
 */
public final class FaultGuarantees {

    /** Waits that ran out and calls the store could not answer: the errors any store may show under faults. */
    public static final Set<String> STORE_ERRORS = Set.of("acquire-timeout", "acquire-store-error", "release-store-error");

    private FaultGuarantees() {
    }

    /** Fails unless {@code report} shows the guarantees, with worker errors only of the {@code expectedErrors} kinds. */
    public static void assertHeld(FaultReport report, Set<String> expectedErrors) {
        FaultReport.Score score = report.score();
        assertThat(score.letThrough()).as("overlaps the fencing referee let through").isZero();
        assertThat(score.silentLosses()).as("leases lost without the holder being told").isEmpty();
        assertThat(report.locksLeftHeld()).as("locks left held after the run").isZero();
        assertThat(report.faults()).as("faults injected").isNotEmpty()
                .allSatisfy(fault -> {
                    assertThat(fault.detail()).as(fault.name()).doesNotStartWith("failed to inject");
                    assertThat(fault.recoveredAfter()).as("a section completed after " + fault.name() + " at " + fault.at()).isNotNull();
                });
        assertThat(score.errors().keySet()).as("kinds of errors the workers saw").isSubsetOf(expectedErrors);
        assertThat(score.sections()).as("critical sections completed").isPositive();
    }
}
