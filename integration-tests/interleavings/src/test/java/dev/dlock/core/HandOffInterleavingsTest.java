package dev.dlock.core;

import static dev.dlock.core.Interleavings.actor;
import static dev.dlock.core.Interleavings.explore;
import static dev.dlock.core.Interleavings.scenario;
import static dev.dlock.core.Interleavings.SCALE;
import static dev.dlock.core.Interleavings.assertRan;
import static dev.dlock.core.Interleavings.options;

import java.util.List;

import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Lincheck's model checker runs {@link HandOffModel}'s operations on one key through the interleavings of the local
 * turn ({@link LocalTurn}), the hand-off to the next local waiter, re-entry, abort and interrupt, and checks after each
 * what callers rely on: one holder at a time, every waiter either holding the key or gone with its place given back
 * (otherwise a waiter hangs, which Lincheck reports), and the key free in the store and to the next tryAcquire. A lease
 * that is lost or runs out while waiters queue, and asynchronous waiters: {@link LeaseEndInterleavingsTest}.
 *
 * <p>Budgets: the leaving-waiter scenarios are checked against the engine with its fix taken out (a waiter refused
 * while reserved drops the turn it was handed, {@code LocalTurn.settle}): on 2026-11-28 they failed, as the bug does
 * ("the store still holds the key for no handle"), within 110 (abort) and 680 (interrupt) interleavings; the
 * exploration is deterministic but moves with the engine's code (the interrupt needed 175 before the spinning
 * successor), so the budgets are 1.5 times that and are worth re-checking the same way when the hand-off changes. A
 * real interrupt from another thread is also tested without the model checker, in {@link InterruptedSuccessorTest}.
 */
class HandOffInterleavingsTest {

    @AfterAll
    static void stopLastManager() {
        HandOffModel.closeLast();
    }

    @Test
    void aWaiterThatAbortsWhileTheReleasePicksItForTheHandOffLeavesNothingBehind() {
        // Thread 1 holds the key and releases it; thread 2 queues for it with its abort condition already true. The
        // model checker finds the release picking thread 2 for the hand-off while thread 2 checks that condition.
        explore(165, scenario(
                List.of(actor("holdKey"), actor("abort")),
                List.of(actor("releaseKey")),
                List.of(actor("sectionUnlessAborted"))));
    }

    @Test
    void aWaiterInterruptedWhileTheKeyPassesToItLeavesNothingBehind() {
        // Thread 1 holds the key and releases it; thread 2 queues for it and is interrupted while the key passes to it
        // in the store. The model checker finds thread 2 running before the release answers its reservation.
        explore(1020, scenario(
                List.of(actor("holdKey"), actor("interruptDuringHandOffs")),
                List.of(actor("releaseKey")),
                List.of(actor("sectionUnlessInterrupted"))));
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
}
