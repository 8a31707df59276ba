package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.SessionLeases;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Takes, keeps and releases distributed locks on a {@link LockBackend}; the programmatic API and
 * the engine behind the annotation. Thread-safe; create one per backend and share it.
 *
 * <pre>{@code
 * try (LockHandle lock = locks.acquire("order:42", Duration.ofSeconds(5))) {
 *     long token = lock.fencingToken();
 *     // critical section
 * }
 * }</pre>
 *
 * <p>Re-entry by the thread that holds a key costs no store call while the lease surely lives in the
 * store; re-entering a lease that may have run out throws {@link LockLostException}. Within one JVM, threads asking
 * for the same key queue locally in arrival order and only the first of them talks to the store;
 * that one waits for a release notice or the holder's remaining lease, never spinning.
 */
public final class LockManager implements AutoCloseable {

    /** The longest key accepted, in UTF-8 bytes. */
    public static final int MAX_KEY_BYTES = LockKeys.MAX_KEY_BYTES;
    /** The watchdog-managed lease when none is configured. */
    public static final Duration DEFAULT_LEASE_TIME = Duration.ofSeconds(30);
    /** The shortest watchdog-managed lease; the rule is the one for every lease, {@link LockRequest#MIN_LEASE_TIME}. */
    public static final Duration MIN_LEASE_TIME = LockRequest.MIN_LEASE_TIME;
    /** The wait time of requests that do not give one, when none is configured. */
    public static final Duration DEFAULT_WAIT_TIME = Duration.ofSeconds(5);
    /** The most leases renewed in one store call, when none is configured. */
    public static final int DEFAULT_RENEWAL_BATCH_SIZE = 100;
    /** What releasing a lost lease does, when nothing is configured. */
    public static final LeaseLostPolicy DEFAULT_LEASE_LOST_POLICY = LeaseLostPolicy.THROW;
    /** How long {@link #close()} waits for holds still running to end by themselves, when none is configured. */
    public static final Duration DEFAULT_SHUTDOWN_GRACE_PERIOD = Duration.ofSeconds(10);

    /**
     * The most times in a row a key passes from one holder to the next in this JVM without being freed in the
     * store while another owner waits for it; then it is released, so that waiters in other JVMs get their chance.
     */
    static final int MAX_LOCAL_HAND_OFFS = 32;

    /**
     * How long, after such a streak ended, this JVM's own waiters leave the freed key to the owner that waits for it: it
     * learns of the release by a notice, a hop later than a local waiter would, and would otherwise rarely get the key.
     * When nobody takes it meanwhile, the key stays free for this long at most.
     */
    static final Duration DEFAULT_HOLD_BACK_AFTER_STREAK = Duration.ofMillis(2);

    private final LockBackend backend;
    final Optional<ReleaseNotices> notices;
    final Optional<RenewalGrouping> renewalGrouping;
    /** What the store can do, asked once. */
    private final BackendCapabilities capabilities;
    /** True when the store keeps leases alive by its session: watchdog leases get no renewals. */
    final boolean sessionKept;
    /** Whether the store can keep a key until lockAtLeastFor ends: one whose leases expire, or one that times a shortened lease. */
    final boolean keepsLockAtLeastFor;
    /** True when a released exclusive lease may pass straight to the next local waiter ({@link Builder#localHandOff}). */
    private final boolean handOffs;
    /** {@link #DEFAULT_HOLD_BACK_AFTER_STREAK}, or what a test set. */
    final long holdBackAfterStreakNanos;
    private final Duration defaultWaitTime;
    final long watchdogLeaseMillis;
    final LockListener listener;
    final Watchdog watchdog;
    /** Failed acquisitions whose commands may still land: released again on the watchdog's renewer threads. */
    final UnknownAttempts unknownAttempts;
    /** Ends leases: releases, local hand-offs, {@code lockAtLeastFor}. */
    final LeaseRelease releases;
    final OwnerTokens ownerTokens;
    /** The threads of asynchronous acquisitions, made on first use. */
    private final AsyncRuntime.OnFirstUse asyncRuntime;
    /** The keys in use, each with its local turn, leases and release notices. */
    final KeyGates gates = new KeyGates();
    /** Marks leases lost and tells their holders. */
    final LeaseLosses losses;
    /** The listener calls of the watchdog and the store's callbacks, off their threads. */
    final BackgroundEvents backgroundEvents;
    final AtomicInteger watchedLeases = new AtomicInteger();
    /** Told by the store of releases forced from any JVM; removed again at close. */
    private final HolderInspection.ForcedReleaseListener forcedReleases;
    /** Null when lock-order warnings are off ({@link Builder#lockOrderWarnings}). */
    final LockOrderMonitor lockOrder;
    private volatile boolean closed;
    private final Duration shutdownGracePeriod;
    private final ManagerShutdown shutdown = new ManagerShutdown(this);
    private final LockAdmin admin = new LockAdmin(this);

    private LockManager(Builder builder) {
        this.backend = builder.backend;
        this.capabilities = backend.capabilities();
        this.notices = capabilities.releaseNotices();
        this.defaultWaitTime = builder.waitTime;
        this.watchdogLeaseMillis = builder.leaseTime.toMillis();
        // Without listeners, events cost nothing: no fan-out, no per-event lambdas.
        this.listener = builder.listeners.isEmpty() ? LockListener.NO_OP : new SafeListener(builder.listeners);
        this.backgroundEvents = new BackgroundEvents(!builder.listeners.isEmpty(), builder.watchdogThreadName + "-events");
        this.renewalGrouping = capabilities.renewalGrouping();
        int batchSize = Math.min(builder.renewalBatchSize, renewalGrouping.map(RenewalGrouping::maxBatchSize).orElse(Integer.MAX_VALUE));
        long coalesceNanos = TimeUnit.MILLISECONDS.toNanos(watchdogLeaseMillis) / 6;
        // Before the watchdog, whose thread serves it from its first round.
        Optional<SessionLeases> sessionLeases = capabilities.sessionLeases();
        this.sessionKept = sessionLeases.isPresent();
        this.keepsLockAtLeastFor = sessionLeases.map(SessionLeases::endsShortenedLeases).orElse(true);
        this.unknownAttempts = new UnknownAttempts(backend, sessionKept, watchdogLeaseMillis);
        this.watchdog = new Watchdog(this, backend, batchSize, coalesceNanos, builder.watchdogThreadName);
        this.handOffs = builder.localHandOff && !sessionKept && capabilities.localHandOff().isPresent();
        this.holdBackAfterStreakNanos = builder.holdBackAfterStreak.toNanos();
        this.releases = new LeaseRelease(this, builder.leaseLostPolicy);
        this.losses = new LeaseLosses(this, sessionKept);
        sessionLeases.ifPresent(session -> session.addLeaseLossListener(losses::storeReported));
        this.forcedReleases = losses::forcedInStore;
        capabilities.holderInspection().ifPresent(inspection -> inspection.addForcedReleaseListener(forcedReleases));
        this.ownerTokens = new OwnerTokens(builder.instanceId != null ? builder.instanceId : OwnerTokens.defaultInstance());
        this.lockOrder = builder.lockOrderWarnings
                ? new LockOrderMonitor(LockOrderMonitor.DEFAULT_MAX_ORDERS, listener::onLockOrderInversion) : null;
        this.shutdownGracePeriod = builder.shutdownGracePeriod;
        this.asyncRuntime = new AsyncRuntime.OnFirstUse(builder.virtualThreads);
    }

    /** Starts configuring a manager over {@code backend}. */
    public static Builder builder(LockBackend backend) {
        return new Builder(backend);
    }

    /**
     * Acquires {@code key}, waiting up to {@code waitTime} while someone else holds it; the lease is
     * watchdog-managed.
     *
     * @throws LockNotAcquiredException when the wait expires or the thread is interrupted
     * @throws LockBackendException when the store cannot be reached
     * @throws LockKeyException when the key is null, blank or longer than {@value #MAX_KEY_BYTES} bytes
     * @throws LockLostException when the thread re-enters a lease of its own that may have run out
     */
    public LockHandle acquire(String key, Duration waitTime) {
        return acquire(LockRequest.builder(key).waitTime(waitTime).build());
    }

    /**
     * Acquires the lock {@code request} describes.
     *
     * @throws LockNotAcquiredException when the wait expires, the abort condition holds, or the thread is interrupted
     * @throws LockBackendException when the store cannot be reached
     * @throws LockKeyException when the key is null, blank or longer than {@value #MAX_KEY_BYTES} bytes
     * @throws LockLostException when the thread re-enters a lease of its own that may have run out
     */
    public LockHandle acquire(LockRequest request) {
        Acquisition.Outcome attempt = attempt(request);
        if (attempt.handle() != null) {
            return withStops(request, attempt.handle());
        }
        throw new LockNotAcquiredException(request.name(), request.key(), attempt.failure(), Duration.ofNanos(attempt.waitedNanos()),
                waitTimeOf(request));
    }

    /** {@code handle}, interrupting this thread when its lease is lost if the request asked for it. */
    private static LockHandle withStops(LockRequest request, LockHandle handle) {
        if (request.stopWorkOnLeaseLost()) {
            handle.interruptOnLeaseLost();
        }
        return handle;
    }

    /** Tries {@code key} once, without waiting; empty when someone else holds it. */
    public Optional<LockHandle> tryAcquire(String key) {
        return tryAcquire(LockRequest.builder(key).waitTime(Duration.ZERO).build());
    }

    /**
     * Acquires the lock {@code request} describes, or returns empty when it is not acquired (wait
     * expired, aborted, or interrupted — the interrupt status is kept).
     *
     * @throws LockBackendException when the store cannot be reached
     */
    public Optional<LockHandle> tryAcquire(LockRequest request) {
        LockHandle handle = attempt(request).handle();
        return Optional.ofNullable(handle == null ? null : withStops(request, handle));
    }

    /**
     * Acquires the lock {@code request} describes without blocking the calling thread: store calls run
     * on dlock's own threads, and the wait is driven by release notices and timers. The future completes
     * with the handle on a dlock thread, bound to no thread: no thread re-enters it by asking for the key again
     * until one binds it with {@link LockHandle#attachToCurrentThread()}; or fails with {@link LockNotAcquiredException},
     * {@link LockBackendException} or {@link LockLostException}. Cancelling it while it waits gives
     * up the attempt; a lock taken after the cancellation is released at once. A thread that holds
     * the key already re-enters, and the future is complete on return.
     *
     * @throws LockKeyException when the key is null, blank or too long
     * @throws IllegalStateException when the manager is closed
     */
    public CompletableFuture<LockHandle> acquireAsync(LockRequest request) {
        String key = usableKey(request);
        LeaseHandle reentered;
        try {
            reentered = gates.reenter(request.kind(), key);
        } catch (LockLostException | IllegalStateException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (reentered != null) {
            return CompletableFuture.completedFuture(reentered);
        }
        try {
            refuseIfClosed(key);
        } catch (IllegalStateException e) {
            return CompletableFuture.failedFuture(e);
        }
        return new AsyncAcquisition(this, asyncRuntime.get(), request, key).start();
    }

    /** Makes the threads waiting in key gates time out by {@code timedWait}'s clock (a model checker's), before any waits. */
    void useTimedWait(KeyGate.TimedWait timedWait) {
        gates.useTimedWait(timedWait);
    }

    /** Gives the asynchronous acquisitions {@code runtime}'s threads (a model checker's), before the first one starts. */
    void useAsyncRuntime(AsyncRuntime runtime) {
        asyncRuntime.use(runtime);
    }

    /** Runs {@code work} holding {@code key}, waiting up to {@code waitTime} for it, and releases it on every exit path. */
    public <T extends @Nullable Object, E extends Exception> T withLock(String key, Duration waitTime, LockCallback<T, E> work) throws E {
        return withLock(LockRequest.builder(key).waitTime(waitTime).build(), work);
    }

    /** Runs {@code work} holding the lock {@code request} describes, and releases it on every exit path. */
    public <T extends @Nullable Object, E extends Exception> T withLock(LockRequest request, LockCallback<T, E> work) throws E {
        try (LockHandle ignored = acquire(request)) {
            return work.call();
        }
    }

    /**
     * Whether released exclusive leases pass straight to the next local waiter (set, and supported by the store); false
     * once the manager is closing, whose waiters get no key any more.
     */
    public boolean handsOffLocally() {
        return handOffs && !closed;
    }

    /** The wait time used for requests that do not give one. */
    public Duration defaultWaitTime() {
        return defaultWaitTime;
    }

    /** How long {@code request} may wait: its own wait time, or this manager's default. */
    Duration waitTimeOf(LockRequest request) {
        return request.waitTime() != null ? request.waitTime() : defaultWaitTime;
    }

    /** Who holds a key across the fleet, an operator's forced release, and diagnostics of this manager. */
    public LockAdmin admin() {
        return admin;
    }

    /** The store this manager locks in. */
    public LockBackend backend() {
        return backend;
    }

    /** What the store can do, as it declared when this manager was built. */
    public BackendCapabilities capabilities() {
        return capabilities;
    }

    /**
     * Closes the manager with the grace period it was built with ({@link Builder#shutdownGracePeriod}, default
     * {@link #DEFAULT_SHUTDOWN_GRACE_PERIOD}); see {@link #close(Duration)}.
     */
    @Override
    public void close() {
        close(shutdownGracePeriod);
    }

    /**
     * Closes the manager and frees what it holds, so that a deploy leaves no key to its lease. New acquisitions fail at
     * once with {@link IllegalStateException} (a thread re-entering a key it still holds is not a new acquisition),
     * and so do acquisitions still waiting, asynchronous ones included. Holds still running get up to
     * {@code gracePeriod} to end by themselves (their leases are renewed meanwhile); the closing thread's own holds are
     * not waited for. Then every lease still held is released in the store as its holder's release would (a lease
     * with {@code lockAtLeastFor} keeps its minimum) and reported lost to its holder: its state becomes
     * {@link LockState#LOST}, the listeners hear {@link LockListener#onLeaseLost} (the reason says the manager was
     * closed), and its handle's {@code close()} reports the loss per the {@link LeaseLostPolicy} without another store
     * call. Its section may still be running: the key is another's from then on. Returns once nothing is left to
     * release, so the store's client may be closed after it; the backend itself is not closed (its creator owns it).
     * A release that fails here is logged (the key then expires after its lease), never thrown.
     *
     * <p>Idempotent and safe from any thread: a later or concurrent call waits for the first one to finish, whose grace
     * period counts; a call from a listener on the closing thread itself (told of a lease the close frees) or on the
     * events thread returns at once.
     *
     * @param gracePeriod how long holds still running may take to end by themselves; zero frees them at once
     */
    public void close(Duration gracePeriod) {
        validGracePeriod(gracePeriod);
        shutdown.run(gracePeriod, () -> {
            closed = true;
            asyncRuntime.closeIfMade();
            gates.refuseWaiters();
        }, () -> {
            watchdog.stop();
            backgroundEvents.close();
            capabilities.holderInspection().ifPresent(inspection -> inspection.removeForcedReleaseListener(forcedReleases));
        });
    }

    /** The grace period {@link #close()} gives holds still running. */
    public Duration shutdownGracePeriod() {
        return shutdownGracePeriod;
    }

    private static Duration validGracePeriod(Duration gracePeriod) {
        Objects.requireNonNull(gracePeriod, "gracePeriod");
        if (gracePeriod.isNegative()) {
            throw new IllegalArgumentException("the shutdown grace period must not be negative, was " + gracePeriod);
        }
        return gracePeriod;
    }

    /** Fails an acquisition of {@code key} once the manager is closed: its leases would be left for nobody. */
    void refuseIfClosed(String key) {
        if (closed) {
            throw new IllegalStateException("lock manager is closed; cannot lock key '" + key + "'");
        }
    }

    /** Whether {@link #close()} has begun: nothing new is taken from then on. */
    boolean isClosed() {
        return closed;
    }

    /**
     * Counts a store call (an acquisition's attempt, or a hand-off to a local waiter) that may grant a key, until
     * {@link #grantSettled}: {@code close()} waits for those in flight, so that none grants a key after it returned.
     * False, and nothing counted, once the manager is closed.
     */
    boolean grantStarting() {
        // Counted before the closed flag is read, and close() sets the flag before it reads the count: one sees the other.
        shutdown.grantStarted();
        if (closed) {
            shutdown.grantSettled();
            return false;
        }
        return true;
    }

    /** The grant counted by {@link #grantStarting} was recorded as a lease, given back, or never came. */
    void grantSettled() {
        shutdown.grantSettled();
    }

    /** Whether the manager's shutdown released {@code lease} in the store already: its holder's release sends nothing. */
    boolean freedAtShutdown(Lease lease) {
        return closed && shutdown.freedInStore(lease);
    }

    // ---------------------------------------------------------------- acquisition

    /** The request's key, once the request is one this manager can serve (the closed check follows re-entry). */
    private String usableKey(LockRequest request) {
        String key = validKey(request.key());
        LockKind kind = request.kind();
        if (!capabilities.supports(kind)) {
            throw new IllegalArgumentException("the store " + backend.getClass().getSimpleName() + " cannot take " + kind
                    + " locks (it supports " + capabilities.modes() + "); key '" + key + "'");
        }
        if (request.lockAtLeastFor() != null && !keepsLockAtLeastFor) {
            throw new IllegalArgumentException("lockAtLeastFor needs a store whose leases expire on their own; "
                    + backend.getClass().getSimpleName() + " keeps leases alive by its session and cannot time a "
                    + "shortened one (key '" + key + "')");
        }
        return key;
    }

    /** A blocking acquisition: re-entry, or the gate, the turn and the store, until it holds the key or gives up. */
    private Acquisition.Outcome attempt(LockRequest request) {
        String key = usableKey(request);
        LeaseHandle reentered = gates.reenter(request.kind(), key);
        if (reentered != null) {
            return new Acquisition.Outcome(reentered, null, 0);
        }
        refuseIfClosed(key);
        return new Acquisition(this, request, key, null).run();
    }

    /** Counts a lease just published in its gate, applies a loss reported while it was granted, and schedules its renewals. */
    void recordHeld(Lease lease, boolean renewed, long sentAt) {
        losses.grantRecorded(lease);
        if (lease.watched) {
            watchedLeases.incrementAndGet();
        }
        if (renewed) {
            watchdog.ensureRunning();
            synchronized (lease) {
                watchdog.schedule(lease, sentAt + lease.renewalIntervalNanos());
            }
        }
        if (closed) {
            shutdown.heldWhileClosing(lease);
        }
    }

    /**
     * Checks a key against the rules every backend relies on ({@link LockKeys#valid}); returns it unchanged.
     *
     * @throws LockKeyException when the key is null, blank or longer than {@value #MAX_KEY_BYTES} bytes
     */
    public static String validKey(String key) {
        return LockKeys.valid(key);
    }

    /** One user fewer of {@code gate}: an acquisition that ended without the key, or a lease released. */
    void leaveGate(LockKind kind, String key, KeyGate gate) {
        gates.leave(kind, key, gate);
        if (closed) {
            // After the gate was cleared: the shutdown's wait for holds to end looks again.
            shutdown.leaseEnded();
        }
    }

    // ---------------------------------------------------------------- lease events

    /** The calling thread handed {@code lease} to a pending result: it no longer counts as held by this thread. */
    void detached(Lease lease) {
        if (lockOrder != null) {
            lockOrder.released(lease);
        }
    }

    /** Tells the listeners a renewal's outcome, on the events thread: called by the watchdog. */
    void renewalOutcome(Lease lease, LockListener.RenewalOutcome outcome) {
        backgroundEvents.tell(() -> listener.onRenewal(lease.lockName, lease.key, outcome));
    }

    /** Tells the listeners that a batch's {@code leases} were renewed, in one hop to the events thread. */
    void renewed(List<Lease> leases) {
        if (leases.isEmpty() || listener == LockListener.NO_OP) {
            return;
        }
        backgroundEvents.tell(() -> {
            for (Lease lease : leases) {
                listener.onRenewal(lease.lockName, lease.key, LockListener.RenewalOutcome.RENEWED);
            }
        });
    }

    /** Configures a {@link LockManager}. */
    public static final class Builder {
        private final LockBackend backend;
        private Duration waitTime = DEFAULT_WAIT_TIME;
        private Duration leaseTime = DEFAULT_LEASE_TIME;
        private int renewalBatchSize = DEFAULT_RENEWAL_BATCH_SIZE;
        private LeaseLostPolicy leaseLostPolicy = DEFAULT_LEASE_LOST_POLICY;
        private final List<LockListener> listeners = new ArrayList<>();
        private String watchdogThreadName = "dlock-watchdog";
        private boolean virtualThreads;
        private boolean localHandOff = true;
        private Duration holdBackAfterStreak = DEFAULT_HOLD_BACK_AFTER_STREAK;
        private boolean lockOrderWarnings = true;
        private String instanceId;
        private Duration shutdownGracePeriod = DEFAULT_SHUTDOWN_GRACE_PERIOD;

        private Builder(LockBackend backend) {
            this.backend = Objects.requireNonNull(backend, "backend");
        }

        /** The wait time of requests that do not set one (default 5 s). */
        public Builder waitTime(Duration waitTime) {
            this.waitTime = LockRequest.validWaitTime(waitTime);
            return this;
        }

        /** The watchdog-managed lease, renewed every third of it (default 30 s; at least {@link #MIN_LEASE_TIME}). */
        public Builder leaseTime(Duration leaseTime) {
            this.leaseTime = LockRequest.validLeaseTime(Objects.requireNonNull(leaseTime, "leaseTime"));
            return this;
        }

        /** The most leases the watchdog renews in one store call (default 100). */
        public Builder renewalBatchSize(int renewalBatchSize) {
            if (renewalBatchSize < 1) {
                throw new IllegalArgumentException("renewalBatchSize must be at least 1, was " + renewalBatchSize);
            }
            this.renewalBatchSize = renewalBatchSize;
            return this;
        }

        /** Whether releasing a lost lease throws {@link LockLostException} or logs (default throw). */
        public Builder leaseLostPolicy(LeaseLostPolicy policy) {
            this.leaseLostPolicy = Objects.requireNonNull(policy, "leaseLostPolicy");
            return this;
        }

        /** Adds a listener; listeners are called in the order added. */
        public Builder listener(LockListener listener) {
            listeners.add(Objects.requireNonNull(listener, "listener"));
            return this;
        }

        /** Names the watchdog thread (default {@code dlock-watchdog}). */
        public Builder watchdogThreadName(String name) {
            this.watchdogThreadName = Objects.requireNonNull(name, "watchdogThreadName");
            return this;
        }

        /**
         * Whether a released exclusive lease passes straight to the next thread of this JVM waiting for the key,
         * when the store supports it (default true): one store call with a fresh fencing token instead of a
         * release and an acquisition. Once another owner (another JVM, or a fair waiter) has asked for the key, at most
         * {@value LockManager#MAX_LOCAL_HAND_OFFS} more hand-offs in a row, then the key is freed in the store so
         * that it gets its chance.
         */
        public Builder localHandOff(boolean handOff) {
            this.localHandOff = handOff;
            return this;
        }

        /** How long this JVM's waiters leave a key freed at the end of a hand-off streak to other owners (tests widen it). */
        Builder holdBackAfterStreak(Duration holdBack) {
            this.holdBackAfterStreak = holdBack;
            return this;
        }

        /**
         * Whether the manager learns the order in which each thread nests lock names and logs one WARN (and tells
         * {@link LockListener#onLockOrderInversion}) per pair of names taken in both orders: a potential deadlock
         * (default true; tens of nanoseconds per acquisition, see docs/benchmarks.md).
         */
        public Builder lockOrderWarnings(boolean enabled) {
            this.lockOrderWarnings = enabled;
            return this;
        }

        /**
         * The name this instance gives itself in every owner token, so that any JVM reading the store can say who
         * holds a key (default: host name and process id). Printable ASCII but '/'; other characters become '_',
         * and it is cut to 48 characters.
         */
        public Builder instanceId(String instanceId) {
            if (instanceId == null || instanceId.isBlank()) {
                throw new IllegalArgumentException("instanceId must not be blank");
            }
            this.instanceId = instanceId;
            return this;
        }

        /**
         * How long {@link LockManager#close()} waits for holds still running to end by themselves before it releases
         * them in the store and reports them lost to their holders (default 10 s; zero frees them at once).
         */
        public Builder shutdownGracePeriod(Duration gracePeriod) {
            this.shutdownGracePeriod = validGracePeriod(gracePeriod);
            return this;
        }

        /**
         * Runs the store calls of asynchronous acquisitions ({@link LockManager#acquireAsync}, the aspect's
         * {@code CompletableFuture}, {@code Mono} and coroutine methods) on virtual threads instead of platform threads
         * (default false; Spring Boot sets it from {@code spring.threads.virtual.enabled}). Still at most 64 store calls
         * at once.
         *
         * @throws IllegalStateException when true on a Java without virtual threads (before 21)
         */
        public Builder virtualThreads(boolean virtual) {
            if (virtual) {
                AsyncRuntime.virtualThreads("dlock-check-");
            }
            this.virtualThreads = virtual;
            return this;
        }

        /** Builds the manager and starts its watchdog thread. */
        public LockManager build() {
            return new LockManager(this);
        }
    }
}
