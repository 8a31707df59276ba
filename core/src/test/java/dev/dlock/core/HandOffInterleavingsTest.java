package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;

import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.ExceptionResult;
import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.jetbrains.kotlinx.lincheck.Result;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionResult;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.kotlinx.lincheck.execution.ResultWithClock;
import org.jetbrains.kotlinx.lincheck.strategy.managed.modelchecking.ModelCheckingOptions;
import org.jetbrains.kotlinx.lincheck.verifier.Verifier;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Lincheck's model checker runs {@link HandOffModel}'s operations on one key through the interleavings of the local
 * turn ({@link KeyGate}), the hand-off to the next local waiter, re-entry, abort, interrupt, asynchronous waiters
 * (whose pool steps and timers run on the model's threads, {@link ModelTime}) and a lease that is lost or runs out
 * while waiters queue, and checks after each what callers rely on: one holder at a time, every waiter either holding the key or gone with its place given back
 * (otherwise a waiter hangs, which Lincheck reports), and the key free in the store and to the next tryAcquire.
 *
 * <p>The scenarios of a lease that runs out were checked against the engine with the lapse unwatched: with
 * {@code KeyGate.nanosUntilTurnLapses} answering "never", both hang (Lincheck: "The execution has hung"); with only
 * the asynchronous check ignoring it, the scenario of asynchronous waiters alone hangs.
 *
 * <p>Budgets: before the fix, on JDK 17 and 25 alike, the leaving-waiter scenarios failed within 100 (abort) and 175
 * (interrupt) interleavings (the exploration is deterministic); the budgets are 2.5 and 2 times that. A real
 * interrupt from another thread is also tested without the model checker, in {@link InterruptedSuccessorTest}.
 * {@code -Ddlock.interleavings.scale=N} multiplies every budget for a deeper run. The surefire configuration of this
 * module carries the JVM flags Lincheck needs.
 */
class HandOffInterleavingsTest {

    private static final int SCALE = Integer.getInteger("dlock.interleavings.scale", 1);

    @AfterAll
    static void stopLastManager() {
        HandOffModel.closeLast();
    }

    @Test
    void aWaiterThatAbortsWhileTheReleasePicksItForTheHandOffLeavesNothingBehind() {
        // Thread 1 holds the key and releases it; thread 2 queues for it with its abort condition already true. The
        // model checker finds the release picking thread 2 for the hand-off while thread 2 checks that condition.
        explore(250, scenario(
                List.of(actor("holdKey"), actor("abort")),
                List.of(actor("releaseKey")),
                List.of(actor("sectionUnlessAborted"))));
    }

    @Test
    void aWaiterInterruptedWhileTheKeyPassesToItLeavesNothingBehind() {
        // Thread 1 holds the key and releases it; thread 2 queues for it and is interrupted while the key passes to it
        // in the store. The model checker finds thread 2 running before the release answers its reservation.
        explore(350, scenario(
                List.of(actor("holdKey"), actor("interruptDuringHandOffs")),
                List.of(actor("releaseKey")),
                List.of(actor("sectionUnlessInterrupted"))));
    }

    @Test
    void aLeaseLostWhileWaitersQueueGivesTheTurnOnAndLeavesNothingBehind() {
        // Thread 1 holds the key; its lease is lost (the store dropped it, the engine learns it) while a thread queues
        // for the key and the old holder releases, in every order: the waiter gets the key (else it hangs), the release
        // reports the loss or releases, one holder at a time, nothing left held.
        explore(60, scenario(
                List.of(actor("holdKey")),
                List.of(actor("loseHeldKey")),
                List.of(actor("section")),
                List.of(actor("releaseKey"))));
    }

    @Test
    void waitersGetTheKeyOfALostLeaseWithoutItsRelease() {
        // The old holder releases only after every parallel operation finished: the two waiters must get the key from
        // the loss alone. Before the local turn ended with the lease, they hung here.
        explore(30, heldKeyReleasedAfter("loseHeldKey", "section", "section"));
    }

    @Test
    void asyncAndThreadWaitersGetTheKeyOfALostLease() {
        // As above, one waiter asynchronous: its turn comes from the loss, its store step runs on the model's threads.
        explore(30, heldKeyReleasedAfter("loseHeldKey", "asyncSection", "section"));
    }

    @Test
    void waitersGetTheKeyOfALeaseThatRanOutWithoutItsRelease() {
        // The held fixed lease runs out and nobody tells the engine: a thread waiter and an asynchronous one must see
        // the lapse themselves (their timed checks fire) and take the key, one at a time, before the old handle closes.
        explore(30, heldKeyReleasedAfter("heldLeaseRunsOut", "asyncSection", "section"));
    }

    @Test
    void asyncWaitersAloneGetTheKeyOfALeaseThatRanOut() {
        // No thread waiter to notice the lapse: the asynchronous waiters' own timed checks must.
        explore(30, heldKeyReleasedAfter("heldLeaseRunsOut", "asyncSection", "asyncSection"));
    }

    @Test
    void theKeyPassesBetweenAsyncAndThreadWaitersOnRelease() {
        // A release hands the key to whichever waiter queued first; the asynchronous one's store step runs later, on
        // another thread, while the thread waiter and a try look on.
        explore(30, scenario(
                List.of(actor("holdKey")),
                List.of(actor("releaseKey"), actor("tryOnce")),
                List.of(actor("asyncSection")),
                List.of(actor("section"))));
    }

    @Test
    void handOffChainsReentryTriesAndRandomMixesKeepOneHolderAndSettleEveryWaiter() {
        int invocations = 25 * SCALE;
        HandOffModel.startCounting();
        LinChecker.check(HandOffModel.class, options()
                // Three local waiters, one re-entering, queue behind a holder: the key passes along the chain.
                .addCustomScenario(scenario(
                        List.of(actor("holdKey")),
                        List.of(actor("releaseKey"), actor("section")),
                        List.of(actor("reenteredSection")),
                        List.of(actor("section"))))
                // A try that must not slip in between a hand-off's reservation and its answer.
                .addCustomScenario(scenario(
                        List.of(actor("holdKey")),
                        List.of(actor("releaseKey")),
                        List.of(actor("section")),
                        List.of(actor("tryOnce"))))
                // Random mixes of every operation, three threads of two each.
                .iterations(2)
                .threads(3)
                .actorsPerThread(2)
                .invocationsPerIteration(invocations));
        assertRan(invocations);
    }

    /**
     * A scenario: {@code holdKey} first; then each operation on a thread of its own; then, once all of them finished,
     * the old holder's {@code releaseKey}.
     */
    private static ExecutionScenario heldKeyReleasedAfter(String... parallel) {
        return new ExecutionScenario(List.of(actor("holdKey")),
                Arrays.stream(parallel).map(operation -> List.of(actor(operation))).toList(),
                List.of(actor("releaseKey")), null);
    }

    /** Runs one scenario through up to {@code budget} (times the scale) interleavings. */
    private static void explore(int budget, ExecutionScenario scenario) {
        int invocations = budget * SCALE;
        HandOffModel.startCounting();
        LinChecker.check(HandOffModel.class, options()
                .iterations(0)
                .invocationsPerIteration(invocations)
                .addCustomScenario(scenario));
        assertRan(invocations);
    }

    /** Guards against a vacuous pass: Lincheck that cannot instrument the classes (a JDK too new for it) runs almost nothing. */
    private static void assertRan(int invocations) {
        assertThat(HandOffModel.madeSinceCounting()).as("interleavings the model checker ran").isGreaterThanOrEqualTo(invocations);
    }

    private static ModelCheckingOptions options() {
        return new ModelCheckingOptions()
                .actorsBefore(0)
                .actorsAfter(0)
                // The scenarios are small already; shrinking them only costs time.
                .minimizeFailedScenario(false)
                .verifier(NoExceptionVerifier.class);
    }

    /** A scenario: {@code initial} runs first on thread 1, then each of {@code threads} on a thread of its own. */
    @SafeVarargs
    private static ExecutionScenario scenario(List<Actor> initial, List<Actor>... threads) {
        return new ExecutionScenario(initial, Arrays.asList(threads), List.of(), null);
    }

    private static Actor actor(String operation) {
        try {
            Method method = HandOffModel.class.getMethod(operation);
            return new Actor(method, List.of());
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException("no operation " + operation + " in " + HandOffModel.class.getSimpleName(), e);
        }
    }

    /**
     * Accepts any outcome of the operations (held, aborted, interrupted, busy are all legal) except an exception:
     * what must hold is checked by {@link HandOffModel#settled()} and by Lincheck's hang detection, not by comparing
     * results with a sequential run.
     */
    public static final class NoExceptionVerifier implements Verifier {

        /** Lincheck's contract: every verifier takes the sequential specification, unused here. */
        public NoExceptionVerifier(Class<?> sequentialSpecification) {
        }

        @Override
        public boolean verifyResults(ExecutionScenario scenario, ExecutionResult results) {
            boolean parallelClean = results.getParallelResultsWithClock().stream()
                    .flatMap(List::stream)
                    .map(ResultWithClock::getResult)
                    .noneMatch(ExceptionResult.class::isInstance);
            return parallelClean && clean(results.getInitResults()) && clean(results.getPostResults());
        }

        private static boolean clean(List<Result> part) {
            return part.stream().noneMatch(ExceptionResult.class::isInstance);
        }
    }
}
