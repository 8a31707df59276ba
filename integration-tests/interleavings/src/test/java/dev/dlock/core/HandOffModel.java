package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import java.time.Duration;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.jetbrains.kotlinx.lincheck.annotations.Operation;
import org.jetbrains.kotlinx.lincheck.annotations.Validate;

/**
 * One key of one {@link LockManager} over a real {@link InMemoryLockBackend}, local hand-off on, for Lincheck's model
 * checker: each operation is what a caller does with the key, and {@link #settled()} checks, once every operation has
 * finished, what callers rely on. Leases are fixed, so no lease ever reaches the watchdog thread (not under the model
 * checker's control), and waits are long: under the model checker {@code System.nanoTime()} stands still, so time
 * moves only when {@link #heldLeaseRunsOut()} says ({@link ModelTime}); any other wait ends by a signal or not at all (a
 * hang, which Lincheck reports with the threads' stacks). Asynchronous acquisitions run their pool steps on the
 * model's own threads.
 */
public class HandOffModel {

    static final String KEY = "hot";
    private static final Duration LEASE = Duration.ofMinutes(10);
    /** The term an extension shortens the held lease to. */
    private static final Duration SHORT_TERM = Duration.ofSeconds(1);
    private static final Duration LONG_WAIT = Duration.ofHours(1);
    /** Past the lease, by more than the engine's own slack, so that a wait until the lease lapses is due. */
    private static final long LEASE_SLACK_NANOS = 2_000_000;
    /** The previous invocation's manager: each one starts a watchdog thread, stopped before the next is made. */
    private static final AtomicReference<LockManager> previous = new AtomicReference<>();
    /** Models made since {@link #startCounting()}: at least one per interleaving run. */
    private static final AtomicInteger made = new AtomicInteger();

    private final InMemoryLockBackend store = new InMemoryLockBackend();
    /** The real store, tapped so that a scenario can act while a hand-off is in flight. */
    private final RecordingBackend tapped = new RecordingBackend(store);
    private final LockManager locks = LockManager.builder(tapped).localHandOff(true).build();
    /** Time, which moves only when a lease runs out, and the asynchronous acquisitions' pool, run by the model's threads. */
    private final ModelTime time = new ModelTime();
    private final AtomicBoolean abortRequested = new AtomicBoolean();
    private final AtomicReference<Thread> interruptible = new AtomicReference<>();
    /** Holders inside their section now, and how often a section began while another was inside. */
    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger tokenInversions = new AtomicInteger();
    private final AtomicInteger reentriesWithTokensOfTheirOwn = new AtomicInteger();
    private long lastToken;
    private LockHandle held;
    /** True while {@link #held}'s section counts as inside: until its release, or until its lease is lost. */
    private final AtomicBoolean heldInside = new AtomicBoolean();
    /** True once {@link #closeManager()}'s close returned: the application closes its store client then. */
    private final AtomicBoolean closeReturned = new AtomicBoolean();
    /** Acquisitions and releases sent to the store after close() returned (they would fail on a closed client). */
    private final AtomicInteger commandsAfterClose = new AtomicInteger();

    /** Made by Lincheck before each invocation, outside the model (so the watchdog thread it starts is not modelled). */
    public HandOffModel() {
        made.incrementAndGet();
        LockManager before = previous.getAndSet(locks);
        if (before != null) {
            // Only the watchdog thread needs stopping: the model's store, time and pool are its own. Not through close():
            // a scenario the model checker cut short may leave a thread of it suspended holding a key's turn lock, which
            // close() takes to wake the waiters, so a close would wait for ever, keeping that model (and its watchdog,
            // waking every 100 ms) alive: hundreds of them doubled the module's run time.
            before.watchdog.stop();
        }
        if (!locks.handsOffLocally()) {
            throw new IllegalStateException("the model needs local hand-off on");
        }
        locks.useAsyncRuntime(time.asyncRuntime());
        locks.useTimedWait(time);
    }

    private void countIfAfterClose() {
        if (closeReturned.get()) {
            commandsAfterClose.incrementAndGet();
        }
    }

    /** Starts counting the models made, that is the interleavings run. */
    static void startCounting() {
        made.set(0);
    }

    /** How many models were made since {@link #startCounting()}. */
    static int madeSinceCounting() {
        return made.get();
    }

    /** Stops the last invocation's watchdog thread (see the constructor: the rest of a model is its own). */
    static void closeLast() {
        LockManager last = previous.getAndSet(null);
        if (last != null) {
            last.watchdog.stop();
        }
    }

    /** Takes the key for a later {@link #releaseKey()} on the same thread (scenarios' initial part; not a random operation). */
    public void holdKey() {
        held = locks.acquire(request().build());
        enterSection(held);
        heldInside.set(true);
    }

    /** Releases what {@link #holdKey()} took; "LOST" when {@link #loseHeldKey()} took its lease first. */
    public String releaseKey() {
        if (heldInside.compareAndSet(true, false)) {
            leaveSection();
        }
        try {
            held.close();
            return "RELEASED";
        } catch (LockLostException lost) {
            return "LOST";
        }
    }

    /**
     * The store loses {@link #held}'s lease (an owner-checked delete, as a restart or failover would) and the engine
     * learns it (as the watchdog would): the holder is no longer inside, and this JVM's waiters must get the key
     * without waiting for the old handle's release.
     */
    @Operation
    public void loseHeldKey() {
        Lease lease = heldLeaseLeavingItsSection();
        if (lease == null) {
            return;
        }
        store.release(LockKind.EXCLUSIVE, KEY, lease.owner, lease.issuedToken());
        locks.losses.leaseLost(lease, "the store lost it (the model)");
    }

    /**
     * {@link #held}'s fixed lease runs out: time passes its expiry, the store lets the key go, and the timed waits and
     * timers due by then end. Nobody tells the engine: this JVM's waiters must see the lapse themselves and get the
     * key without waiting for the old handle's release. Only {@link #held}'s lease runs out: the engine's clock stands
     * still under the model checker, so the lease is moved instead of the clock, and every later lease is taken after it.
     */
    @Operation
    public void heldLeaseRunsOut() {
        Lease lease = heldLeaseLeavingItsSection();
        if (lease == null) {
            return;
        }
        // The engine's estimate runs out first (it counts from when the acquisition was sent), then the store's.
        lease.expiresAtNanos = System.nanoTime() - 1;
        store.release(LockKind.EXCLUSIVE, KEY, lease.owner, lease.issuedToken());
        time.passes(LEASE.toNanos() + LEASE_SLACK_NANOS);
    }

    /**
     * An extension shortens {@link #held}'s fixed lease, and the short term then runs out (as in
     * {@link #heldLeaseRunsOut()}, only the short term's time passes): a waiter of this JVM asleep until the old term's
     * end must be woken by the shortening, and take the key.
     */
    @Operation
    public void heldTermShortenedAndRunsOut() {
        Lease lease = heldLeaseLeavingItsSection();
        if (lease == null) {
            return;
        }
        held.extend(SHORT_TERM);
        lease.expiresAtNanos = System.nanoTime() - 1;
        store.release(LockKind.EXCLUSIVE, KEY, lease.owner, lease.issuedToken());
        time.passes(SHORT_TERM.toNanos() + LEASE_SLACK_NANOS);
    }

    /**
     * Closes the manager at once (no grace period) while others acquire: once it returned, the application closes the
     * store's client, so no acquisition or release may be sent after it. Not an {@code @Operation}: the random mixes
     * would call the others after it, which then fail as closed (scenarios name it, as they do {@link #holdKey()}).
     */
    public void closeManager() {
        // Counted only where a scenario closes the manager: every hook is one more step for the checker to interleave.
        tapped.aroundAcquire(call -> {
            countIfAfterClose();
            return call.get();
        });
        tapped.aroundRelease(call -> {
            countIfAfterClose();
            return call.get();
        });
        locks.close(Duration.ZERO);
        closeReturned.set(true);
    }

    /**
     * As {@link #section()}, or "CLOSED" when the manager's close ended the acquisition, or "LOST" when it took the
     * key and the close freed it under the section (no grace period).
     */
    public String sectionUnlessClosed() {
        try {
            return section();
        } catch (IllegalStateException closed) {
            return "CLOSED";
        } catch (LockLostException freedByTheClose) {
            return "LOST";
        }
    }

    /** As {@link #asyncSection()}, or "CLOSED" or "LOST" as {@link #sectionUnlessClosed()}. */
    public String asyncSectionUnlessClosed() {
        try {
            return asyncSection();
        } catch (CompletionException failed) {
            if (failed.getCause() instanceof IllegalStateException) {
                return "CLOSED";
            }
            throw failed;
        } catch (IllegalStateException closed) {
            return "CLOSED";
        } catch (LockLostException freedByTheClose) {
            return "LOST";
        }
    }

    /** {@link #held}'s lease, its section no longer counted as inside (the lease is about to end); null before it. */
    private Lease heldLeaseLeavingItsSection() {
        LockHandle handle = held;
        if (handle == null) {
            return null;
        }
        if (heldInside.compareAndSet(true, false)) {
            leaveSection();
        }
        return ((LeaseHandle) handle).lease();
    }

    /**
     * From now on, every hand-off interrupts the thread of a running {@link #sectionUnlessInterrupted()} while the
     * key passes in the store, that is while the releasing holder has picked its successor (scenarios' initial part).
     */
    public void interruptDuringHandOffs() {
        tapped.aroundHandOff(handOff -> {
            interrupt();
            return handOff.get();
        });
    }

    /** Waits for the key, holds it through a section, releases it. */
    @Operation
    public String section() {
        try (LockHandle lock = locks.acquire(request().build())) {
            return inSection(lock);
        }
    }

    /**
     * As {@link #section()}, through {@link LockManager#acquireAsync}: the calling thread then stands in for dlock's
     * pool, running the acquisition's store steps (and anyone else's) until the future completes.
     */
    @Operation
    public String asyncSection() {
        CompletableFuture<LockHandle> acquiring = locks.acquireAsync(request().build());
        time.runStepsUntil(acquiring::isDone);
        LockHandle lock;
        try {
            lock = acquiring.join();
        } catch (CompletionException failed) {
            if (failed.getCause() instanceof LockNotAcquiredException refused) {
                return refused.reason().name();
            }
            throw failed;
        }
        try (lock) {
            return inSection(lock);
        }
    }

    /** As {@link #section()}, re-entering the key once inside: the inner release must not let anyone in. */
    @Operation
    public String reenteredSection() {
        try (LockHandle outer = locks.acquire(request().build())) {
            try (LockHandle inner = locks.acquire(request().build())) {
                if (inner.fencingToken() != outer.fencingToken()) {
                    reentriesWithTokensOfTheirOwn.incrementAndGet();
                }
            }
            return inSection(outer);
        }
    }

    /** Waits for the key unless {@link #abort()} ran first (the abort condition of a shutting-down caller). */
    @Operation
    public String sectionUnlessAborted() {
        LockRequest request = request().abortIf(abortRequested::get).abortCheckInterval(LONG_WAIT).build();
        try (LockHandle lock = locks.acquire(request)) {
            return inSection(lock);
        } catch (LockNotAcquiredException refused) {
            return refused.reason().name();
        }
    }

    /** Makes every {@link #sectionUnlessAborted()} that checks its condition from now on give up. */
    @Operation
    public void abort() {
        abortRequested.set(true);
    }

    /** Waits for the key until {@link #interrupt()} interrupts the waiting thread. */
    @Operation
    public String sectionUnlessInterrupted() {
        interruptible.set(Thread.currentThread());
        try (LockHandle lock = locks.acquire(request().build())) {
            return inSection(lock);
        } catch (LockNotAcquiredException refused) {
            return refused.reason().name();
        } finally {
            synchronized (interruptible) {
                interruptible.set(null);
                // The interrupt was for this operation only: the thread runs the next one.
                Thread.interrupted();
            }
        }
    }

    /** Interrupts the thread of a running {@link #sectionUnlessInterrupted()}, if any. */
    @Operation
    public void interrupt() {
        synchronized (interruptible) {
            Thread waiter = interruptible.get();
            if (waiter != null) {
                waiter.interrupt();
            }
        }
    }

    /** Takes the key only if it is free at once. */
    @Operation
    public String tryOnce() {
        Optional<LockHandle> taken = locks.tryAcquire(request().waitTime(Duration.ZERO).build());
        if (taken.isEmpty()) {
            return "BUSY";
        }
        try (LockHandle lock = taken.get()) {
            return inSection(lock);
        }
    }

    private static LockRequest.Builder request() {
        return LockRequest.builder(KEY).leaseTime(LEASE).waitTime(LONG_WAIT);
    }

    /** A section from start to end: the key held, checked against the other holders. */
    private String inSection(LockHandle lock) {
        enterSection(lock);
        leaveSection();
        return "HELD";
    }

    private void enterSection(LockHandle lock) {
        if (inside.incrementAndGet() != 1) {
            overlaps.incrementAndGet();
        }
        if (lock.fencingToken() <= lastToken) {
            tokenInversions.incrementAndGet();
        }
        lastToken = lock.fencingToken();
    }

    private void leaveSection() {
        inside.decrementAndGet();
    }

    /**
     * After every operation finished and closed its handle: no two sections overlapped, tokens grew section by
     * section, the store holds the key for nobody, and this JVM's turn was given back (the next tryAcquire succeeds).
     */
    @Validate
    public void settled() {
        if (overlaps.get() != 0) {
            throw new AssertionError(overlaps.get() + " sections began while another holder was inside");
        }
        if (tokenInversions.get() != 0) {
            throw new AssertionError(tokenInversions.get() + " sections saw a fencing token not above the previous one");
        }
        if (reentriesWithTokensOfTheirOwn.get() != 0) {
            throw new AssertionError(reentriesWithTokensOfTheirOwn.get() + " re-entries got a fencing token of their own");
        }
        if (commandsAfterClose.get() != 0) {
            throw new AssertionError(commandsAfterClose.get() + " acquisitions or releases were sent after close() returned");
        }
        AcquireResult probe = store.tryAcquire(LockKind.EXCLUSIVE, KEY, "probe", 1_000);
        if (!(probe instanceof AcquireResult.Acquired acquired)) {
            throw new AssertionError("every operation has finished and closed its handle, yet the store still holds the key ("
                    + probe + ") for no handle");
        }
        store.release(LockKind.EXCLUSIVE, KEY, "probe", acquired.fencingToken());
        if (closeReturned.get()) {
            return;
        }
        Optional<LockHandle> next = locks.tryAcquire(request().waitTime(Duration.ZERO).build());
        if (next.isEmpty()) {
            throw new AssertionError("the key is free in the store, yet tryAcquire is refused: this JVM's turn on it was "
                    + "never given back");
        }
        next.get().close();
    }
}
