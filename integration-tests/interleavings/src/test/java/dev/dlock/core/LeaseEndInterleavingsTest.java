package dev.dlock.core;

import static dev.dlock.core.Interleavings.actor;
import static dev.dlock.core.Interleavings.explore;
import static dev.dlock.core.Interleavings.scenario;
import static dev.dlock.core.Interleavings.heldKeyReleasedAfter;

import java.util.List;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;

/**
 * Lincheck's model checker runs {@link HandOffModel}'s operations through the interleavings of a lease that is lost or
 * runs out while thread and asynchronous waiters queue (the waiters' pool steps and timers run on the model's threads,
 * {@link ModelTime}), and of the key passing between the two kinds of waiter: the local turn must end with the lease,
 * one holder at a time, every waiter settled, nothing left held. The hand-off itself: {@link HandOffInterleavingsTest}.
 *
 * <p>The scenarios of a lease that runs out were checked against the engine with the lapse unwatched: with
 * {@code LocalTurn.nanosUntilTurnLapses} answering "never", both hang (Lincheck: "The execution has hung"); with only
 * the asynchronous check ignoring it, the scenario of asynchronous waiters alone hangs.
 */
class LeaseEndInterleavingsTest {

    @AfterAll
    static void stopLastManager() {
        HandOffModel.closeLast();
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

    /**
     * Five scenarios of 30 interleavings each, in one run of the model checker (about 4 s of interleavings each against
     * 7 s per run): Lincheck's report of a failure prints the scenario that failed.
     */
    /**
     * The manager closes while a thread and an asynchronous acquisition wait for the held key or are in their store
     * call: each ends holding the key or refused, close() returns only after every store call it could have raced, and
     * nothing is sent to the store after it returned (the application closes its client then).
     */
    @Test
    void aCloseRacingAcquisitionsInFlightLeavesNothingForAClosedClient() {
        explore(60, scenario(List.of(), List.of(actor("closeManager")), List.of(actor("sectionUnlessClosed")),
                List.of(actor("asyncSectionUnlessClosed"))));
    }

    @Test
    void waitersGetTheKeyWhenALeaseIsLostOrRunsOutAndWhenItPassesBetweenAsyncAndThreadWaiters() {
        explore(30,
                // The old holder releases only after every parallel operation finished: the two waiters must get the
                // key from the loss alone. Before the local turn ended with the lease, they hung here.
                heldKeyReleasedAfter("loseHeldKey", "section", "section"),
                // As above, one waiter asynchronous: its turn comes from the loss, its store step runs on the model's
                // threads.
                heldKeyReleasedAfter("loseHeldKey", "asyncSection", "section"),
                // The held fixed lease runs out and nobody tells the engine: a thread waiter and an asynchronous one
                // must see the lapse themselves (their timed checks fire) and take the key, one at a time, before the
                // old handle closes.
                heldKeyReleasedAfter("heldLeaseRunsOut", "asyncSection", "section"),
                // No thread waiter to notice the lapse: the asynchronous waiters' own timed checks must.
                heldKeyReleasedAfter("heldLeaseRunsOut", "asyncSection", "asyncSection"),
                // An extension shortens the held fixed lease, and the short term runs out: the waiters, asleep until the
                // old term's end, must be woken by the shortening and take the key (else they hang).
                heldKeyReleasedAfter("heldTermShortenedAndRunsOut", "asyncSection", "section"),
                // A release hands the key to whichever waiter queued first; the asynchronous one's store step runs
                // later, on another thread, while the thread waiter and a try look on.
                scenario(
                        List.of(actor("holdKey")),
                        List.of(actor("releaseKey"), actor("tryOnce")),
                        List.of(actor("asyncSection")),
                        List.of(actor("section"))));
    }
}
