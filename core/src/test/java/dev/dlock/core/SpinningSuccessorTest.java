package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A waiter that a releasing holder reserves for a hand-off is woken at once and spins for the store's answer instead
 * of sleeping until it comes. Whatever happens meanwhile (the answer comes during the spin or after it, says the key
 * was not passed, or an interrupt arrives), the waiter takes exactly what the holder answered, and keeps an interrupt
 * for its caller. The turn is driven directly here, so that each step happens in a known order; the whole hand-off over
 * a real store runs in the stores' contract tests, where a hand-off call is fast enough for the spin.
 */
class SpinningSuccessorTest extends EngineTestSupport {

    private static final long LONG_SPIN_NANOS = TimeUnit.SECONDS.toNanos(60);
    private static final LocalTurn.HandOff PASSED = new LocalTurn.HandOff("next-owner", 7, 0, 0);

    private final LocalTurn turn = new LocalTurn(new KeyHolders(), KeyGate.TimedWait.JDK);

    /** A thread queued for the turn, and what its wait ended with, its interrupt status at that moment included. */
    private record Queued(Thread thread, CompletableFuture<LocalTurn.Turn> turn, CompletableFuture<Boolean> interrupted) {
    }

    @Test
    void aReservedWaiterSpinsAndTakesTheKeyAnsweredDuringTheSpin() throws Exception {
        Spinning spinning = reserveASpinningSuccessor();
        Queued waiter = spinning.waiter();
        LocalTurn.Waiter reserved = spinning.reserved();

        turn.handOver(reserved, PASSED);

        LocalTurn.Turn got = waiter.turn().get(10, TimeUnit.SECONDS);
        assertThat(got.owned()).as("the turn").isTrue();
        assertThat(got.refusal()).as("refusal").isNull();
        assertThat(got.handOff()).as("the key handed over").isSameAs(PASSED);
    }

    @Test
    void anInterruptDuringTheSpinIsKeptForTheCallerAndTheKeyHandedOverIsTaken() throws Exception {
        Spinning spinning = reserveASpinningSuccessor();
        Queued waiter = spinning.waiter();
        LocalTurn.Waiter reserved = spinning.reserved();

        waiter.thread().interrupt();
        // The holder is in the middle of its store call: the waiter must not leave, whatever it was told.
        await("the interrupt delivered", Duration.ofSeconds(10), () -> waiter.thread().isInterrupted());
        assertThat(waiter.turn()).as("the wait, before the holder answered").isNotDone();
        turn.handOver(reserved, PASSED);

        LocalTurn.Turn got = waiter.turn().get(10, TimeUnit.SECONDS);
        assertThat(got.owned()).as("the turn").isTrue();
        assertThat(got.handOff()).as("the key handed over").isSameAs(PASSED);
        assertThat(waiter.interrupted().get(10, TimeUnit.SECONDS)).as("the interrupt, kept for the caller").isTrue();
    }

    @Test
    void aWaiterWhoseSpinEndsBeforeTheAnswerSleepsAndIsWokenWithIt() throws Exception {
        Queued waiter = holdTheTurnAndQueue();
        LocalTurn.Waiter reserved = turn.reserveSuccessor(TimeUnit.MILLISECONDS.toNanos(1));
        await("the reserved waiter asleep after its spin", Duration.ofSeconds(10),
                () -> waiter.thread().getState() == Thread.State.WAITING && inFrame(waiter.thread(), "awaitHandOver"));

        turn.handOver(reserved, PASSED);

        LocalTurn.Turn got = waiter.turn().get(10, TimeUnit.SECONDS);
        assertThat(got.owned()).as("the turn").isTrue();
        assertThat(got.handOff()).as("the key handed over").isSameAs(PASSED);
    }

    @Test
    void aHandOffThatFailedGivesTheSpinningWaiterTheTurnWithoutTheKey() throws Exception {
        Spinning spinning = reserveASpinningSuccessor();
        Queued waiter = spinning.waiter();
        LocalTurn.Waiter reserved = spinning.reserved();

        // The store call failed or its outcome stayed unknown: the waiter asks the store itself.
        turn.handOver(reserved, null);

        LocalTurn.Turn got = waiter.turn().get(10, TimeUnit.SECONDS);
        assertThat(got.owned()).as("the turn").isTrue();
        assertThat(got.handOff()).as("no key handed over").isNull();
    }

    @Test
    void theSpinFollowsRecentHandOffCallsAndStopsForASlowStore() {
        LeaseRelease releases = manager(new RecordingBackend(store), b -> b.localHandOff(true)).releases;
        assertThat(releases.successorSpinNanos()).as("before any hand-off").isZero();

        releases.handOffCallTook(TimeUnit.MICROSECONDS.toNanos(100));
        assertThat(releases.successorSpinNanos()).as("after one call of 100 µs").isEqualTo(TimeUnit.MICROSECONDS.toNanos(200));

        for (int i = 0; i < 40; i++) {
            releases.handOffCallTook(TimeUnit.MILLISECONDS.toNanos(2));
        }
        assertThat(releases.successorSpinNanos()).as("after calls of 2 ms: waking costs little beside them").isZero();

        for (int i = 0; i < 80; i++) {
            releases.handOffCallTook(TimeUnit.MICROSECONDS.toNanos(50));
        }
        assertThat(releases.successorSpinNanos()).as("once calls are fast again")
                .isBetween(TimeUnit.MICROSECONDS.toNanos(100), TimeUnit.MICROSECONDS.toNanos(110));
    }

    /** A successor reserved for a hand-off, spinning for the holder's answer. */
    private record Spinning(Queued waiter, LocalTurn.Waiter reserved) {
    }

    /** Queues a successor behind this thread's turn, reserves it with a long spin and waits until it spins. */
    private Spinning reserveASpinningSuccessor() {
        Queued waiter = holdTheTurnAndQueue();
        LocalTurn.Waiter reserved = turn.reserveSuccessor(LONG_SPIN_NANOS);
        await("the reserved waiter spinning", Duration.ofSeconds(10), () -> inFrame(waiter.thread(), "spinForHandOver"));
        return new Spinning(waiter, reserved);
    }

    /** Takes the turn on this thread, then queues another thread behind it and waits until it sleeps. */
    private Queued holdTheTurnAndQueue() {
        assertThat(enter()).as("the first to ask").isSameAs(LocalTurn.Turn.OURS);
        CompletableFuture<LocalTurn.Turn> result = new CompletableFuture<>();
        CompletableFuture<Boolean> interrupted = new CompletableFuture<>();
        Thread thread = start("successor", () -> {
            result.complete(enter());
            interrupted.complete(Thread.currentThread().isInterrupted());
        });
        await("the successor queued", Duration.ofSeconds(10), () -> waitsForTheTurn(thread));
        return new Queued(thread, result, interrupted);
    }

    private LocalTurn.Turn enter() {
        return turn.enter(System.nanoTime() + TimeUnit.SECONDS.toNanos(60), null, 0, 30_000, true, "holder", false);
    }

    private static boolean inFrame(Thread thread, String method) {
        return Arrays.stream(thread.getStackTrace()).anyMatch(frame -> frame.getClassName().equals(LocalTurn.class.getName())
                && frame.getMethodName().equals(method));
    }
}
