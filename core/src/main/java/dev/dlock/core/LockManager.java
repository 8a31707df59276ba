package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.core.spi.StoreNode;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

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

    private static final Logger log = LoggerFactory.getLogger(LockManager.class);

    /** The longest key accepted, in UTF-8 bytes. */
    public static final int MAX_KEY_BYTES = 1024;
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

    private static final long SUBSCRIBE_WAIT_NANOS = TimeUnit.SECONDS.toNanos(1);
    private static final int RELEASE_ATTEMPTS = 10;
    private static final long RELEASE_RETRY_BUDGET_NANOS = TimeUnit.SECONDS.toNanos(2);
    private static final long RELEASE_RETRY_FIRST_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(5);
    private static final long RELEASE_RETRY_MAX_BACKOFF_NANOS = TimeUnit.MILLISECONDS.toNanos(250);
    /**
     * The most times in a row a key passes from one holder to the next in this JVM without being freed in the
     * store while another owner waits for it; then it is released, so that waiters in other JVMs get their chance.
     */
    static final int MAX_LOCAL_HAND_OFFS = 8;

    private final LockBackend backend;
    final Optional<ReleaseNotices> notices;
    private final Optional<RenewalGrouping> renewalGrouping;
    /** What the store can do, asked once. */
    private final BackendCapabilities capabilities;
    /** True when the store keeps leases alive by its session: watchdog leases get no renewals. */
    private final boolean sessionKept;
    /** True when a released exclusive lease may pass straight to the next local waiter ({@link Builder#localHandOff}). */
    private final boolean handOffs;
    private final Duration defaultWaitTime;
    final long watchdogLeaseMillis;
    private final LeaseLostPolicy leaseLostPolicy;
    final LockListener listener;
    private final Watchdog watchdog;
    final OwnerTokens ownerTokens = new OwnerTokens();
    /** The threads of asynchronous acquisitions, made on first use. */
    private volatile AsyncRuntime asyncRuntime;
    private final Object asyncRuntimeLock = new Object();
    private final ConcurrentHashMap<GateKey, KeyGate> gates = new ConcurrentHashMap<>();
    /**
     * On a session-keeping store, the owners whose acquisition is under way, with the loss the store reported for
     * one of them before its grant was recorded as a lease ({@link #NO_LOSS} while none): the store may report a grant
     * lost (its session ended) before the acquiring thread records it, and the report must not be dropped.
     */
    private final ConcurrentHashMap<String, String> acquiringOwners = new ConcurrentHashMap<>();
    private static final String NO_LOSS = "";
    private final AtomicInteger watchedLeases = new AtomicInteger();
    private volatile boolean closed;

    private LockManager(Builder builder) {
        this.backend = builder.backend;
        this.notices = backend.releaseNotices();
        this.defaultWaitTime = builder.waitTime;
        this.watchdogLeaseMillis = builder.leaseTime.toMillis();
        this.leaseLostPolicy = builder.leaseLostPolicy;
        // Without listeners, events cost nothing: no fan-out, no per-event lambdas.
        this.listener = builder.listeners.isEmpty() ? LockListener.NO_OP : new SafeListener(builder.listeners);
        this.renewalGrouping = backend.renewalGrouping();
        this.capabilities = backend.capabilities();
        int batchSize = Math.min(builder.renewalBatchSize, renewalGrouping.map(RenewalGrouping::maxBatchSize).orElse(Integer.MAX_VALUE));
        long coalesceNanos = TimeUnit.MILLISECONDS.toNanos(watchdogLeaseMillis) / 6;
        this.watchdog = new Watchdog(this, backend, batchSize, coalesceNanos, builder.watchdogThreadName);
        Optional<SessionLeases> sessionLeases = backend.sessionLeases();
        this.sessionKept = sessionLeases.isPresent();
        this.handOffs = builder.localHandOff && !sessionKept && capabilities.handOff();
        sessionLeases.ifPresent(session -> session.addLeaseLossListener(this::storeReportedLoss));
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
        Attempt attempt = attempt(request);
        if (attempt.handle != null) {
            return attempt.handle;
        }
        throw new LockNotAcquiredException(request.name(), request.key(), attempt.failure, Duration.ofNanos(attempt.waitedNanos));
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
        return Optional.ofNullable(attempt(request).handle);
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
            reentered = reentry(request.kind(), key);
        } catch (LockLostException | IllegalStateException e) {
            return CompletableFuture.failedFuture(e);
        }
        if (reentered != null) {
            return CompletableFuture.completedFuture(reentered);
        }
        return new AsyncAcquisition(this, asyncRuntime(), request, key).start();
    }

    private AsyncRuntime asyncRuntime() {
        AsyncRuntime runtime = asyncRuntime;
        if (runtime == null) {
            synchronized (asyncRuntimeLock) {
                runtime = asyncRuntime;
                if (runtime == null) {
                    runtime = new AsyncRuntime();
                    asyncRuntime = runtime;
                }
            }
        }
        return runtime;
    }

    /** Runs {@code work} holding {@code key}, waiting up to {@code waitTime} for it, and releases it on every exit path. */
    public <T, E extends Exception> T withLock(String key, Duration waitTime, LockCallback<T, E> work) throws E {
        return withLock(LockRequest.builder(key).waitTime(waitTime).build(), work);
    }

    /** Runs {@code work} holding the lock {@code request} describes, and releases it on every exit path. */
    public <T, E extends Exception> T withLock(LockRequest request, LockCallback<T, E> work) throws E {
        try (LockHandle ignored = acquire(request)) {
            return work.call();
        }
    }

    /** Whether released exclusive leases pass straight to the next local waiter (set, and supported by the store). */
    public boolean handsOffLocally() {
        return handOffs;
    }

    /** The wait time used for requests that do not give one. */
    public Duration defaultWaitTime() {
        return defaultWaitTime;
    }

    /** The locks this manager holds now, for diagnostics. */
    public List<HeldLock> heldLocks() {
        List<HeldLock> held = new ArrayList<>();
        long now = System.nanoTime();
        for (KeyGate gate : gates.values()) {
            Lease lease = gate.holder;
            if (lease != null) {
                held.add(heldLock(lease, now));
            }
            for (Lease shared : gate.sharedHolders) {
                held.add(heldLock(shared, now));
            }
        }
        return held;
    }

    private static HeldLock heldLock(Lease lease, long now) {
        Thread thread = lease.ownerThread;
        return new HeldLock(lease.lockName, lease.key, thread == null ? null : thread.getName(),
                Duration.ofNanos(now - lease.acquiredAtNanos),
                lease.keptBySession ? null : Duration.ofNanos(Math.max(0, lease.expiresAtNanos - now)), lease.renewals,
                lease.fencingToken, lease.watched, lease.state());
    }

    /** How many watchdog-managed leases are held now. */
    public int watchedLeaseCount() {
        return watchedLeases.get();
    }

    /** How many renewal rounds or batches failed since start (the watchdog logs each and carries on). */
    public long watchdogErrorCount() {
        return watchdog.errors();
    }

    /**
     * How many renewal calls are in flight now for longer than the leases they carry can afford (a
     * third of the shortest lease): a stalled store node. Zero when the watchdog keeps up.
     */
    public int watchdogStalledCalls() {
        return watchdog.stalledCalls();
    }

    /** How many renewal calls overran their deadline since start (each also logged). */
    public long watchdogStallCount() {
        return watchdog.stallCount();
    }

    /** How many renewal calls the watchdog has made to the store since start. */
    public long watchdogRenewCallCount() {
        return watchdog.renewCalls();
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
     * Stops the watchdog; later acquisitions fail with {@link IllegalStateException}. Locks still held
     * are no longer renewed and expire in the store after their lease; the backend is not closed (its
     * creator owns it).
     */
    @Override
    public void close() {
        closed = true;
        watchdog.stop();
        AsyncRuntime runtime = asyncRuntime;
        if (runtime != null) {
            runtime.close();
        }
        int held = watchedLeases.get();
        if (held > 0) {
            log.warn("dlock lock manager closed while holding {} watchdog-managed locks; they expire after their lease", held);
        }
    }

    // ---------------------------------------------------------------- acquisition

    private record Attempt(LockHandle handle, LockNotAcquiredException.Reason failure, long waitedNanos) {
    }

    /** The request's key, once the request is one this manager can serve now. */
    private String usableKey(LockRequest request) {
        String key = validKey(request.key());
        if (closed) {
            // Its watchdog is gone: a lease taken now would silently run out.
            throw new IllegalStateException("lock manager is closed; cannot lock key '" + key + "'");
        }
        LockKind kind = request.kind();
        if (!capabilities.supports(kind)) {
            throw new IllegalArgumentException("the store " + backend.getClass().getSimpleName() + " cannot take " + kind
                    + " locks (it supports " + capabilities.modes() + "); key '" + key + "'");
        }
        if (request.lockAtLeastFor() != null && sessionKept) {
            throw new IllegalArgumentException("lockAtLeastFor needs a store whose leases expire on their own; "
                    + backend.getClass().getSimpleName() + " keeps leases alive by its session (key '" + key + "')");
        }
        return key;
    }

    /**
     * A new handle on the lease the calling thread holds on {@code key} in {@code kind}'s family; null when it
     * holds none. A read inside the thread's own write lease re-enters the write lease; a write asked for
     * inside the thread's own read lease is refused, since two readers doing that would wait for each other.
     */
    private LeaseHandle reentry(LockKind kind, String key) {
        KeyGate current = gates.get(new GateKey(kind.family(), key));
        if (current == null) {
            return null;
        }
        Thread me = Thread.currentThread();
        Lease held = current.holder;
        if (held != null && held.ownerThread == me && held.reenter()) {
            return new LeaseHandle(held, true);
        }
        for (Lease shared : current.sharedHolders) {
            if (shared.ownerThread != me) {
                continue;
            }
            if (kind.mode() == LockKind.Mode.WRITE) {
                throw new IllegalStateException("this thread holds " + shared + " and asks for its WRITE lock: a read lock "
                        + "cannot be upgraded (two readers doing so would wait for each other forever); release the read "
                        + "lock first, or take the write lock from the start");
            }
            if (shared.reenter()) {
                return new LeaseHandle(shared, true);
            }
        }
        return null;
    }

    /** When the wait of {@code request}, started at {@code start}, ends. */
    long deadline(LockRequest request, long start) {
        return start + (request.waitTime() != null ? request.waitTime() : defaultWaitTime).toNanos();
    }

    private Attempt attempt(LockRequest request) {
        String key = usableKey(request);
        String name = request.name();
        LeaseHandle reentered = reentry(request.kind(), key);
        if (reentered != null) {
            return new Attempt(reentered, null, 0);
        }
        long start = System.nanoTime();
        long deadline = deadline(request, start);
        listener.onAcquireAttempt(name, key);

        KeyGate gate = enterGate(request.kind(), key);
        StoreOutcome outcome;
        try {
            outcome = acquireThroughGate(gate, request, key, deadline);
        } catch (RuntimeException | Error e) {
            leaveGate(request.kind(), key, gate);
            listener.onAcquireFailed(name, key, LockListener.AcquireFailure.ERROR, Duration.ofNanos(System.nanoTime() - start), e);
            throw e;
        }
        Duration waited = Duration.ofNanos(System.nanoTime() - start);
        if (outcome instanceof Taken taken) {
            listener.onAcquired(name, key, taken.lease().fencingToken, waited);
            return new Attempt(new LeaseHandle(taken.lease(), false), null, 0);
        }
        leaveGate(request.kind(), key, gate);
        LockNotAcquiredException.Reason reason = ((Refused) outcome).reason();
        listener.onAcquireFailed(name, key, failureOf(reason), waited, null);
        return new Attempt(null, reason, waited.toNanos());
    }

    /** How one acquisition in the store ended: the key taken with its lease, or refused and why. */
    sealed interface StoreOutcome {
    }

    /** The key is held; the lease owns this JVM's turn on the key until it is released. */
    record Taken(Lease lease) implements StoreOutcome {
    }

    /** Not acquired: the wait ran out, the abort condition held, or the thread was interrupted. */
    record Refused(LockNotAcquiredException.Reason reason) implements StoreOutcome {
    }

    /**
     * The store granted the key, but its answer came after the lease could have run out, so another
     * owner may hold the key already: the grant is given back and the acquisition asks again.
     */
    record Expired() implements StoreOutcome {
    }

    /**
     * Waits for this JVM's turn, then for the store; the turn passes to an exclusive lease, or is given back on
     * every other exit. A fair acquisition takes no turn: it queues in the store, where the order across JVMs is kept.
     */
    private StoreOutcome acquireThroughGate(KeyGate gate, LockRequest request, String key, long deadline) {
        boolean hasTurn = request.kind().mode() != LockKind.Mode.FAIR;
        KeyGate.HandOff handedOver = null;
        if (hasTurn) {
            KeyGate.Turn turn = passGate(gate, request, key, deadline, leaseMillisOf(request));
            if (turn.refusal() != null) {
                return new Refused(turn.refusal());
            }
            handedOver = turn.handOff();
        }
        String owner = handedOver != null ? handedOver.owner() : ownerTokens.next();
        StoreOutcome outcome = null;
        try {
            if (handedOver != null) {
                boolean watched = request.leaseTime() == null;
                outcome = held(gate, request, key, owner, handedOver.fencingToken(), leaseMillisOf(request), watched,
                        handedOver.sentAtNanos(), true, handedOver.streak());
                if (!(outcome instanceof Expired)) {
                    return outcome;
                }
                owner = ownerTokens.next();
            }
            outcome = acquireInStore(gate, request, key, owner, deadline, hasTurn);
            return outcome;
        } finally {
            if (!(outcome instanceof Taken)) {
                withdrawQuietly(request.kind(), key, owner);
                if (hasTurn) {
                    gate.leave();
                }
            }
        }
    }

    /** Tells the store this acquisition stopped trying, so a store that queues waiters gives up its place at once. */
    void withdrawQuietly(LockKind kind, String key, String owner) {
        if (sessionKept) {
            acquiringOwners.remove(owner);
        }
        try {
            backend.withdraw(kind, key, owner);
        } catch (RuntimeException e) {
            log.warn("dlock could not withdraw from the queue of key '{}'; the store drops the place with its session", key, e);
        }
    }

    /**
     * Waits for this JVM's turn on the key, keeping its arrival place: the turn, perhaps with the key handed over, or
     * why not. A turn granted to a waiter that left meanwhile is given back here, with the key it brought.
     */
    private KeyGate.Turn passGate(KeyGate gate, LockRequest request, String key, long deadline, long leaseMillis) {
        BooleanSupplier abortIf = request.abortIf();
        RuntimeException[] abortFailed = new RuntimeException[1];
        BooleanSupplier checkedAbort = abortIf == null ? null : () -> {
            try {
                return abortIf.getAsBoolean();
            } catch (RuntimeException e) {
                abortFailed[0] = e;
                return true;
            }
        };
        KeyGate.Turn turn = gate.enter(deadline, checkedAbort, request.abortCheckInterval().toNanos(), leaseMillis,
                request.leaseTime() == null);
        if (turn.refusal() != null && turn.owned()) {
            gate.giveBack(turn, handedOver -> releaseQuietly(request.kind(), key, handedOver.owner(), handedOver.fencingToken()));
        }
        if (abortFailed[0] != null) {
            throw abortFailed[0];
        }
        return turn;
    }

    /** The lease a request holds: the watchdog's, or its own fixed lease. */
    private long leaseMillisOf(LockRequest request) {
        return request.leaseTime() == null ? watchdogLeaseMillis : request.leaseTime().toMillis();
    }

    /** Takes the key in the store, waiting on release notices or the holder's lease. */
    private StoreOutcome acquireInStore(KeyGate gate, LockRequest request, String key, String owner, long deadline,
                                        boolean hasTurn) {
        LockKind kind = request.kind();
        // Fair waiters of one JVM all wait in the store at once: each release notice must wake them all.
        boolean fair = !hasTurn;
        BooleanSupplier abortIf = request.abortIf();
        boolean watched = request.leaseTime() == null;
        long leaseMillis = leaseMillisOf(request);
        Optional<Semaphore> signals = Optional.empty();
        boolean subscribed = false;
        WaitPacing pacing = new WaitPacing();
        try {
            while (true) {
                if (abortIf != null && abortIf.getAsBoolean()) {
                    return new Refused(LockNotAcquiredException.Reason.ABORTED);
                }
                signals.ifPresent(Semaphore::drainPermits);
                long noticesSeen = fair ? gate.noticeCount() : 0;
                expectGrant(owner);
                long sentAt = System.nanoTime();
                AcquireResult result = backend.tryAcquire(kind, key, owner, storeLeaseMillis(watched, leaseMillis));
                if (result instanceof AcquireResult.Acquired acquired) {
                    StoreOutcome outcome = held(gate, request, key, owner, acquired.fencingToken(), leaseMillis, watched, sentAt,
                            hasTurn, 0);
                    if (!(outcome instanceof Expired)) {
                        return outcome;
                    }
                    if (deadline - System.nanoTime() <= 0) {
                        return new Refused(LockNotAcquiredException.Reason.TIMEOUT);
                    }
                    continue;
                }
                if (Thread.currentThread().isInterrupted()) {
                    // The store call saw the interrupt (a fan-out gives up and releases what it took).
                    return new Refused(LockNotAcquiredException.Reason.INTERRUPTED);
                }
                long remaining = deadline - System.nanoTime();
                if (remaining <= 0) {
                    return new Refused(LockNotAcquiredException.Reason.TIMEOUT);
                }
                if (!subscribed) {
                    // Subscribe, then try again at once: a release between our attempt and the
                    // subscription would otherwise go unnoticed until the lease ran out.
                    subscribed = true;
                    signals = gate.releaseSignals(notices, key, Math.min(remaining, SUBSCRIBE_WAIT_NANOS));
                    continue;
                }
                long ttlNanos = TimeUnit.MILLISECONDS.toNanos(((AcquireResult.Held) result).remainingTtlMillis());
                long pause = pacing.nextPauseNanos(gate.noticesActive(), ttlNanos, remaining, request);
                if (signals.isPresent() && fair) {
                    // With w waiters ahead the turn comes after w + 1 releases; one fewer in case a release came
                    // between reading the count and the store's answer (at worst one early question).
                    int ahead = ((AcquireResult.Held) result).waitersAhead();
                    gate.awaitNotices(noticesSeen + Math.max(1, ahead), pause);
                } else if (signals.isPresent()) {
                    KeyGate.awaitSignal(signals.get(), pause);
                } else {
                    TimeUnit.NANOSECONDS.sleep(pause);
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Refused(LockNotAcquiredException.Reason.INTERRUPTED);
        }
    }

    /**
     * Records a grant of the store as a lease, unless it came too late or the abort condition holds. A shared
     * lease gives this JVM's turn back ({@code hasTurn}) at once; an exclusive one keeps it until released.
     */
    StoreOutcome held(KeyGate gate, LockRequest request, String key, String owner, long fencingToken,
                        long leaseMillis, boolean watched, long sentAt, boolean hasTurn, int handOffStreak) {
        LockKind kind = request.kind();
        boolean renewed = watched && !sessionKept;
        StoreNode node = renewed ? renewalGrouping.map(grouping -> grouping.nodeOf(key)).orElse(StoreNode.SINGLE) : null;
        Lease lease = new Lease(this, gate, request.name(), key, kind, owner, fencingToken, leaseMillis, watched,
                watched && sessionKept, node, hasTurn && !kind.shared(), sentAt, request.lockAtLeastFor());
        lease.handOffStreak = handOffStreak;
        if (!lease.surelyLive(System.nanoTime()) && !confirmLateGrant(lease)) {
            log.warn("dlock: the store granted key '{}' only after its {} ms lease could have run out (a slow reply), "
                    + "and no longer holds it for us; asking again", key, leaseMillis);
            releaseQuietly(kind, key, owner, fencingToken);
            return new Expired();
        }
        BooleanSupplier abortIf = request.abortIf();
        boolean abort;
        try {
            abort = abortIf != null && abortIf.getAsBoolean();
        } catch (RuntimeException | Error e) {
            releaseQuietly(kind, key, owner, fencingToken);
            throw e;
        }
        if (abort) {
            releaseQuietly(kind, key, owner, fencingToken);
            return new Refused(LockNotAcquiredException.Reason.ABORTED);
        }
        if (kind.shared()) {
            gate.sharedHolders.add(lease);
            if (hasTurn) {
                gate.leave();
            }
        } else {
            gate.holder = lease;
        }
        if (sessionKept) {
            // After the lease is published: a loss reported from now on finds it; one reported before is here.
            String reported = acquiringOwners.remove(owner);
            if (reported != null && !reported.equals(NO_LOSS)) {
                leaseLost(lease, reported);
            }
        }
        if (watched) {
            watchedLeases.incrementAndGet();
        }
        if (renewed) {
            watchdog.ensureRunning();
            synchronized (lease) {
                watchdog.schedule(lease, sentAt + lease.renewalIntervalNanos());
            }
        }
        return new Taken(lease);
    }

    /**
     * A grant whose reply came after the lease could have run out may still be held in the store, whose lease runs
     * from its own grant: one owner-checked renewal tells, and restarts the lease from its send time. Keeping such a
     * grant, instead of giving it back, keeps a fair waiter's turn. False when the store no longer holds it for us.
     */
    private boolean confirmLateGrant(Lease lease) {
        long sentAt = System.nanoTime();
        try {
            List<RenewalResult> answer = backend.renew(List.of(new LeaseRenewal(lease.key, lease.owner, lease.leaseMillis, lease.kind)));
            return answer.get(0) == RenewalResult.RENEWED && lease.renewed(sentAt) && lease.surelyLive(System.nanoTime());
        } catch (LockBackendException e) {
            log.debug("dlock could not confirm the late grant of key '{}': {}", lease.key, e.toString());
            return false;
        }
    }

    private void releaseQuietly(LockKind kind, String key, String owner, long fencingToken) {
        try {
            backend.release(kind, key, owner, fencingToken);
        } catch (RuntimeException e) {
            log.warn("dlock could not release key '{}' after an aborted acquisition; it expires with its lease", key, e);
        }
    }

    /** The lease the store is asked for: a session-keeping store holds watchdog leases until released. */
    long storeLeaseMillis(boolean watched, long leaseMillis) {
        return watched && sessionKept ? SessionLeases.UNTIL_RELEASED : leaseMillis;
    }

    static LockListener.AcquireFailure failureOf(LockNotAcquiredException.Reason reason) {
        return switch (reason) {
            case TIMEOUT -> LockListener.AcquireFailure.TIMEOUT;
            case ABORTED -> LockListener.AcquireFailure.ABORTED;
            case INTERRUPTED -> LockListener.AcquireFailure.INTERRUPTED;
        };
    }

    /** Checks a key against the rules every backend relies on; returns it unchanged. */
    public static String validKey(String key) {
        if (key == null) {
            throw new LockKeyException("lock key is null");
        }
        if (key.isBlank()) {
            throw new LockKeyException("lock key is blank");
        }
        // A char takes at most 3 UTF-8 bytes, so short keys need no encoding to be checked.
        if (key.length() * 3 > MAX_KEY_BYTES) {
            int bytes = key.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_KEY_BYTES) {
                throw new LockKeyException("lock key is " + bytes + " bytes long, the limit is " + MAX_KEY_BYTES
                        + ": '" + key.substring(0, 64) + "...'");
            }
        }
        return key;
    }

    KeyGate enterGate(LockKind kind, String key) {
        return gates.compute(new GateKey(kind.family(), key), (k, gate) -> {
            KeyGate entered = gate == null ? new KeyGate() : gate;
            entered.users++;
            return entered;
        });
    }

    void leaveGate(LockKind kind, String key, KeyGate gate) {
        boolean[] last = new boolean[1];
        gates.computeIfPresent(new GateKey(kind.family(), key), (k, current) -> {
            if (current != gate) {
                return current;
            }
            last[0] = --current.users == 0;
            return last[0] ? null : current;
        });
        if (last[0]) {
            gate.closeSubscription();
        }
    }

    // ---------------------------------------------------------------- release and lease loss

    /** Releases one hold of {@code lease}; {@code outermost} when it is the acquisition that took the key. */
    void release(Lease lease, boolean outermost) {
        LockState before = lease.dropHold();
        if (before == null) {
            if (outermost) {
                // Holds remain (an async call still pending): they own the key now, not this thread.
                lease.ownerThread = null;
            }
            return;
        }
        if (lease.watched) {
            watchdog.cancel(lease);
            if (before == LockState.HELD) {
                watchedLeases.decrementAndGet();
            }
        }
        // Whether the holder's section ended inside its lease: a release that then cannot reach the store leaves
        // only the key's fate unknown, not the section's.
        boolean liveAtRelease = lease.surelyLive(System.nanoTime());
        KeyGate.SyncWaiter successor = before == LockState.HELD && mayHandOff(lease) ? lease.gate.reserveSuccessor() : null;
        KeyGate.HandOff handedOver = null;
        ReleaseResult result = null;
        LockBackendException unknownOutcome = null;
        try {
            if (successor != null) {
                // Null when the store call failed: the key is then released the usual way, and the successor asks for it.
                handedOver = handOffInStore(lease, successor);
                if (handedOver == KeyGate.HandOff.NOT_HELD) {
                    result = ReleaseResult.NOT_OWNER;
                    handedOver = null;
                } else if (handedOver != null) {
                    result = ReleaseResult.RELEASED;
                }
            }
            if (result == null) {
                result = releaseInStore(lease);
            }
        } catch (LockBackendException e) {
            unknownOutcome = e;
        } finally {
            KeyGate gate = lease.gate;
            if (lease.kind.shared()) {
                gate.sharedHolders.remove(lease);
            } else if (gate.holder == lease) {
                gate.holder = null;
            }
            if (successor != null) {
                gate.handOver(successor, handedOver);
            } else if (lease.ownsTurn) {
                gate.leave();
            }
            leaveGate(lease.kind, lease.key, gate);
            listener.onReleased(lease.lockName, lease.key, Duration.ofNanos(System.nanoTime() - lease.acquiredAtNanos));
        }
        String lostBecause = null;
        if (before == LockState.LOST) {
            lostBecause = lease.lostReason;
        } else if (result == ReleaseResult.NOT_OWNER
                || (result == ReleaseResult.ALREADY_FREE && !lease.surelyLive(System.nanoTime()))) {
            // ALREADY_FREE while the lease surely lived can only be our own earlier attempt, whose reply was lost.
            lostBecause = lease.watched
                    ? "at release the key was gone or held by another owner"
                    : "the fixed lease of " + lease.leaseMillis + " ms ran out before release";
            listener.onLeaseLost(lease.lockName, lease.key, lostBecause);
        } else if (unknownOutcome != null && !liveAtRelease) {
            // The lease may have run out before the section ended, and the store cannot say whether another took the
            // key: the holder is told its lease is lost (with the store's error), never only "outcome unknown".
            lostBecause = "the " + lease.leaseMillis + " ms lease may have run out before the release, which could not "
                    + "reach the store";
            listener.onLeaseLost(lease.lockName, lease.key, lostBecause);
        }
        if (lostBecause != null) {
            LockLostException lost = new LockLostException(lease.lockName, lease.key, lostBecause);
            if (unknownOutcome != null) {
                lost.addSuppressed(unknownOutcome);
            }
            if (leaseLostPolicy == LeaseLostPolicy.THROW) {
                throw lost;
            }
            log.warn("{}", lost.getMessage());
        }
        if (unknownOutcome != null) {
            throw unknownOutcome;
        }
    }

    /**
     * Whether a release of {@code lease} may pass the key straight to a local waiter: an exclusive lease holding
     * the turn, with no {@code lockAtLeastFor} to honour, not yet passed on {@link #MAX_LOCAL_HAND_OFFS} times in a
     * row while another owner waits for the key.
     */
    private boolean mayHandOff(Lease lease) {
        return handOffs && lease.ownsTurn && lease.kind.mode() == LockKind.Mode.EXCLUSIVE && lease.keepUntilNanos == 0
                && lease.handOffStreak < MAX_LOCAL_HAND_OFFS;
    }

    /**
     * Passes the key to {@code successor} in the store: a new fencing token, the same store owner. A watchdog
     * lease of the same length keeps the store's expiry and the lease's confirmed time (one command fewer);
     * otherwise the successor's lease is set. The streak counts only hand-offs made while another owner waits: with
     * nobody else asking, passing the key on keeps no one out. {@link KeyGate.HandOff#NOT_HELD} when the lease was
     * lost; null when the call failed.
     */
    private KeyGate.HandOff handOffInStore(Lease lease, KeyGate.SyncWaiter successor) {
        boolean keepExpiry = lease.watched && successor.watched && lease.leaseMillis == successor.leaseMillis;
        long confirmedAt = lease.expiresAtNanos - TimeUnit.MILLISECONDS.toNanos(lease.leaseMillis);
        long sentAt = System.nanoTime();
        try {
            HandOffResult result = backend.handOff(lease.key, lease.owner, keepExpiry ? 0 : successor.leaseMillis);
            if (!(result instanceof HandOffResult.Passed passed)) {
                return KeyGate.HandOff.NOT_HELD;
            }
            int streak = passed.othersWaiting() ? lease.handOffStreak + 1 : 0;
            return new KeyGate.HandOff(lease.owner, passed.fencingToken(), keepExpiry ? confirmedAt : sentAt, streak);
        } catch (LockBackendException e) {
            log.debug("dlock could not hand key '{}' over to the next local holder; releasing it instead: {}", lease.key, e.toString());
            return null;
        }
    }

    /**
     * Releases in the store, repeating a failed call on a fresh connection for a short while: the
     * owner-checked release is safe to repeat, and a restarted store leaves pooled connections that
     * fail once each. Throws when the outcome stays unknown, so the holder is never told "done".
     */
    private ReleaseResult releaseInStore(Lease lease) {
        if (lease.keepUntilNanos != 0 && lease.watched && lease.keepUntilNanos - System.nanoTime() > 0
                && !lease.awaitRenewalAnswer(TimeUnit.MILLISECONDS.toNanos(lease.leaseMillis))) {
            // A full-lease renewal reaching the store after the shortening below would keep the key a whole lease.
            log.warn("dlock: a renewal of {} is still unanswered at its release; the key may stay taken up to one lease", lease);
        }
        long start = System.nanoTime();
        long backoff = RELEASE_RETRY_FIRST_BACKOFF_NANOS;
        LockBackendException first = null;
        for (int attempt = 1; ; attempt++) {
            try {
                // Rounded up: the key is kept at least until lockAtLeastFor ends, never a fraction of a millisecond less.
                long keepMillis = Math.floorDiv(lease.keepUntilNanos - System.nanoTime() + 999_999, 1_000_000);
                if (lease.keepUntilNanos != 0 && keepMillis >= 1) {
                    return keepUntilLockAtLeastFor(lease, keepMillis);
                }
                return backend.release(lease.kind, lease.key, lease.owner, lease.fencingToken);
            } catch (LockBackendException e) {
                if (first == null) {
                    first = e;
                } else {
                    first.addSuppressed(e);
                }
                boolean outOfTime = System.nanoTime() - start + backoff > RELEASE_RETRY_BUDGET_NANOS;
                if (attempt >= RELEASE_ATTEMPTS || outOfTime || !pauseBeforeRetry(backoff)) {
                    throw new LockBackendException("dlock could not release " + lease + " after " + attempt
                            + " attempts; the outcome is unknown: the lease may have been lost before the release, and "
                            + "if the key is still held it expires in the store on its own (" + e.getMessage() + ")", first);
                }
                backoff = Math.min(backoff * 2, RELEASE_RETRY_MAX_BACKOFF_NANOS);
            }
        }
    }

    /**
     * A release before {@code lockAtLeastFor} ran out: the lease is shortened to what is left, so the key
     * frees itself in the store at that moment. Owner-checked like a renewal, and as safe to repeat.
     */
    private ReleaseResult keepUntilLockAtLeastFor(Lease lease, long keepMillis) {
        RenewalResult kept = backend.renew(List.of(new LeaseRenewal(lease.key, lease.owner, keepMillis, lease.kind))).get(0);
        return kept == RenewalResult.RENEWED ? ReleaseResult.RELEASED : ReleaseResult.NOT_OWNER;
    }

    /** Sleeps before another release attempt; false when interrupted (the flag is kept, and no more attempts are made). */
    private static boolean pauseBeforeRetry(long nanos) {
        try {
            TimeUnit.NANOSECONDS.sleep(nanos);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    /** Called by the watchdog when the store says a held lease is gone. */
    void leaseLost(Lease lease, String reason) {
        if (!lease.markLost(reason)) {
            return;
        }
        if (lease.watched) {
            watchedLeases.decrementAndGet();
        }
        log.warn("dlock lease lost: {}: {}", lease, reason);
        listener.onRenewal(lease.lockName, lease.key, LockListener.RenewalOutcome.LOST);
        listener.onLeaseLost(lease.lockName, lease.key, reason);
    }

    /**
     * Marks {@code owner} as acquiring, before each store attempt, on a session-keeping store: a loss the store reports
     * before the grant is recorded is kept for {@link #held} (the store may call back before the attempt returns).
     */
    void expectGrant(String owner) {
        if (sessionKept) {
            acquiringOwners.putIfAbsent(owner, NO_LOSS);
        }
    }

    /**
     * A session-keeping store reports a lease gone; the report counts only while that owner holds the key here, or
     * is acquiring it (then {@link #held} applies it once the grant is recorded).
     */
    private void storeReportedLoss(String key, String owner, String reason) {
        // Kept before the holder is looked at, while held() publishes the lease before it looks here: whichever
        // comes second sees the other.
        acquiringOwners.replace(owner, NO_LOSS, reason);
        KeyGate gate = gates.get(new GateKey(LockKind.EXCLUSIVE.family(), key));
        Lease lease = gate == null ? null : gate.holder;
        if (lease != null && lease.owner.equals(owner)) {
            leaseLost(lease, reason);
        }
    }

    void renewalOutcome(Lease lease, LockListener.RenewalOutcome outcome) {
        listener.onRenewal(lease.lockName, lease.key, outcome);
    }

    /** A key's gate is per family of kinds: the families are separate locks in the store. */
    private record GateKey(int family, String key) {
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
        private boolean localHandOff = true;

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

        /** Builds the manager and starts its watchdog thread. */
        public LockManager build() {
            return new LockManager(this);
        }
    }
}
