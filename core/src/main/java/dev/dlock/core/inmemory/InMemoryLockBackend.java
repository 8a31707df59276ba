package dev.dlock.core.inmemory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.FencingTokens;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.KeyListeners;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LocalHandOff;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.core.spi.TokensOnRequest;
import dev.dlock.core.LockKind;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A {@link LockBackend} that keeps its locks in this JVM's memory: for tests, and for applications that run in one
 * JVM. <b>It locks within one JVM only</b>: two instances of a service each have their own store and never exclude
 * each other. Through the SPI it behaves like the Redis store, every {@link LockKind} and holder inspection included;
 * tests can drive its clock ({@link Builder#clock}). Thread-safe, with no lock shared by all keys.
 * Details (tokens, release answers, records kept): docs/stores.md#in-memory-one-jvm-only.
 *
 * <pre>{@code
 * LockManager locks = LockManager.builder(new InMemoryLockBackend()).build();
 * }</pre>
 */
public final class InMemoryLockBackend implements LockBackend, LocalHandOff, TokensOnRequest, LeaseExtension {

    /** How long a free key's record is kept, so that a repeated release is still recognised. */
    static final long IDLE_RECORD_RETENTION_SECONDS = 60;
    static final long IDLE_RECORD_RETENTION_NANOS = TimeUnit.SECONDS.toNanos(IDLE_RECORD_RETENTION_SECONDS);
    /** The most released read leases or permits of one key remembered, so that their repeated releases are recognised. */
    static final int MAX_SHARE_RELEASE_RECORDS = 10_000;
    /** Below this many records, idle ones are never swept. */
    static final int MIN_SWEEP_THRESHOLD = 1024;

    /** How long a fair waiter or a waiting writer keeps its place without asking again, when nothing else is configured. */
    public static final Duration DEFAULT_FAIR_WAITER_TIMEOUT = Duration.ofSeconds(3);

    private final LongSupplier clock;
    private final long waiterTimeoutNanos;
    /** True when exclusive acquisitions and hand-offs issue no token, and a release recognises only its own repeat. */
    private final boolean tokensOnRequest;
    /** Exclusive and fair locks, one record per key. */
    private final ExclusiveLocks exclusive = new ExclusiveLocks(this);
    /** Read/write locks and permits: one record per key and family, kept while idle until {@link #sweepIfGrown}. */
    private final ShareLocks readWrite = new ShareLocks(this);
    private final ShareLocks permits = new ShareLocks(this);
    /**
     * One counter for every key: strictly increasing per key even after a key's record was forgotten; it starts at this
     * JVM's clock in microseconds, the floor Redis's and the JDBC store's tokens start at (see {@link FencingTokens}).
     */
    private final AtomicLong lastToken = new AtomicLong(FencingTokens.clockFloorMicros());
    private final Notices notices = new Notices();
    private final Inspection inspection = new Inspection();
    /** Every manager over this store, told of each forced release at once (the store runs inside their JVM). */
    private final List<HolderInspection.ForcedReleaseListener> forcedReleaseListeners = new CopyOnWriteArrayList<>();
    private final AtomicBoolean sweeping = new AtomicBoolean();
    /** Sweeping when the record count doubled since the last sweep keeps its cost constant per new key. */
    private volatile long sweepThreshold = MIN_SWEEP_THRESHOLD;

    /** A store on {@link System#nanoTime()}. */
    public InMemoryLockBackend() {
        this(System::nanoTime, DEFAULT_FAIR_WAITER_TIMEOUT, false);
    }

    private InMemoryLockBackend(LongSupplier clock, Duration fairWaiterTimeout, boolean tokensOnRequest) {
        this.clock = clock;
        this.waiterTimeoutNanos = fairWaiterTimeout.toNanos();
        this.tokensOnRequest = tokensOnRequest;
    }

    /** Starts configuring a store, to give it a clock of its own. */
    public static Builder builder() {
        return new Builder();
    }

    /**
     * Every kind (exclusive, fair, read, write and permits), fencing tokens (also issued on request), release notices,
     * who holds a key and an operator's forced release, the local hand-off, and extensions of every kind.
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withModes(EnumSet.allOf(LockKind.Mode.class)).withReleaseNotices(notices)
                .withHolderInspection(inspection).withLocalHandOff(this).withTokensOnRequest(this).withLeaseExtension(this);
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        return tryAcquire(kind, key, owner, leaseMillis, false);
    }

    /** As {@link #tryAcquire(LockKind, String, String, long)}; an exclusive lock issues its token now when {@code issueToken}. */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis, boolean issueToken) {
        Objects.requireNonNull(owner, "owner");
        long leaseNanos = leaseNanos(leaseMillis);
        boolean[] created = new boolean[1];
        AcquireResult result = switch (kind.mode()) {
            case EXCLUSIVE -> exclusive.acquire(key, owner, leaseNanos, issueToken, created);
            case FAIR -> exclusive.acquireFair(key, owner, leaseNanos);
            case READ, PERMITS, WRITE -> sharesOf(kind).acquire(kind, key, owner, leaseNanos, created);
        };
        if (created[0]) {
            sweepIfGrown();
        }
        return result;
    }

    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        ReleaseResult result = kind.family() == LockKind.Family.EXCLUSIVE ? exclusive.release(key, owner, fencingToken)
                : sharesOf(kind).release(kind, key, owner, fencingToken);
        if (result == ReleaseResult.RELEASED) {
            notices.released(key);
        }
        return result;
    }

    /**
     * Keeps the key taken, now by {@code nextOwner}, with a new token and, when {@code leaseMillis} is positive, a new
     * lease; a key {@code nextOwner} holds already is this hand-off repeated.
     */
    @Override
    public HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis) {
        return handOff(key, owner, nextOwner, leaseMillis, false);
    }

    /**
     * As {@link #handOff(String, String, String, long)}; built with {@link Builder#fencingTokensOnRequest}, issues the next
     * holder's token in the same step when {@code issueToken} (a repeated hand-off answers without one, as Redis does).
     */
    @Override
    public HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis, boolean issueToken) {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(nextOwner, "nextOwner");
        return exclusive.handOff(key, owner, nextOwner, leaseMillis > 0 ? leaseNanos(leaseMillis) : 0, issueToken);
    }

    /** Gives the lease to {@code retiredOwner} with {@code keepMillis} left, for every kind, in one step. */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(retiredOwner, "retiredOwner");
        long keepNanos = leaseNanos(keepMillis);
        return kind.family() == LockKind.Family.EXCLUSIVE ? exclusive.shorten(key, owner, retiredOwner, keepNanos)
                : sharesOf(kind).shorten(kind, key, owner, retiredOwner, keepNanos);
    }

    /** A new term of {@code owner}'s lease for {@code nextOwner}, for every kind: the same step as {@link #shorten}. */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        return shorten(kind, key, owner, nextOwner, leaseMillis);
    }

    /**
     * The key's next token from the one counter, while {@code owner} holds {@code key} as a lock of {@code kind};
     * empty (nothing issued) when it does not. Any kind works; only exclusive acquisitions and hand-offs leave it to
     * be asked for, and only when built with {@link Builder#fencingTokensOnRequest}.
     */
    @Override
    public OptionalLong issueFencingToken(LockKind kind, String key, String owner) {
        Objects.requireNonNull(owner, "owner");
        long issued = kind.family() == LockKind.Family.EXCLUSIVE ? exclusive.issueToken(key, owner)
                : sharesOf(kind).issueToken(kind, key, owner);
        return issued == 0 ? OptionalLong.empty() : OptionalLong.of(issued);
    }

    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        if (kind.mode() == LockKind.Mode.FAIR) {
            exclusive.withdrawFair(key, owner);
        } else if (kind.mode() == LockKind.Mode.WRITE) {
            readWrite.withdrawWriter(key, owner);
        }
    }

    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        List<RenewalResult> results = new ArrayList<>(batch.size());
        for (LeaseRenewal renewal : batch) {
            long leaseNanos = leaseNanos(renewal.leaseMillis());
            LockKind kind = renewal.kind();
            results.add(kind.family() == LockKind.Family.EXCLUSIVE ? exclusive.renew(renewal.key(), renewal.owner(), leaseNanos)
                    : sharesOf(kind).renew(kind, renewal.key(), renewal.owner(), leaseNanos));
        }
        return results;
    }

    /**
     * Reads holders inside each record's compute (the shares' maps are changed only there) without changing them; a
     * forced release ends the holders' leases, consumes a fencing token (so that a removed holder's release answers
     * "not owner", never "already free") and wakes the key's waiters.
     */
    private final class Inspection implements HolderInspection {

        @Override
        public List<StoredHolder> holders(LockKind kind, String key) {
            return visit(kind, key, false);
        }

        @Override
        public List<StoredHolder> forceRelease(LockKind kind, String key) {
            List<StoredHolder> removed = visit(kind, key, true);
            if (!removed.isEmpty()) {
                // Before the waiters: the holder's JVM gives its turn on the key on first, and its waiters see it.
                for (StoredHolder holder : removed) {
                    forcedReleaseListeners.forEach(listener -> listener.forced(key, holder.owner()));
                }
                notices.released(key);
            }
            return removed;
        }

        @Override
        public void addForcedReleaseListener(ForcedReleaseListener listener) {
            forcedReleaseListeners.add(Objects.requireNonNull(listener, "listener"));
        }

        @Override
        public void removeForcedReleaseListener(ForcedReleaseListener listener) {
            forcedReleaseListeners.remove(listener);
        }

        private List<StoredHolder> visit(LockKind kind, String key, boolean free) {
            List<StoredHolder> found = new ArrayList<>();
            if (kind.family() == LockKind.Family.EXCLUSIVE) {
                exclusive.visit(key, free, found);
            } else {
                sharesOf(kind).visit(kind, key, free, found);
            }
            return found;
        }
    }

    /** There is no round trip: returns the few nanoseconds a look at the store takes. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        exclusive.size();
        return Math.max(1, System.nanoTime() - start);
    }

    /**
     * Forgets every lock, as a restarted store without persistence would, and wakes every waiter (their
     * keys are free now). Fencing tokens keep increasing; the backend stays usable.
     */
    @Override
    public void close() {
        exclusive.clear();
        readWrite.clear();
        permits.clear();
        notices.releasedAll();
    }

    /** How many key records the store keeps now, of every kind, held or idle. */
    int recordCount() {
        return exclusive.size() + readWrite.size() + permits.size();
    }

    private void sweepIfGrown() {
        if (recordCount() < sweepThreshold || !sweeping.compareAndSet(false, true)) {
            return;
        }
        try {
            long now = clock.getAsLong();
            exclusive.sweep(now);
            readWrite.sweep(now);
            permits.sweep(now);
            sweepThreshold = Math.max(MIN_SWEEP_THRESHOLD, 2 * recordCount());
        } finally {
            sweeping.set(false);
        }
    }

    private ShareLocks sharesOf(LockKind kind) {
        return kind.mode() == LockKind.Mode.PERMITS ? permits : readWrite;
    }

    /** The store's clock, in nanoseconds. */
    long now() {
        return clock.getAsLong();
    }

    /** The next token of the one counter. */
    long nextToken() {
        return lastToken.incrementAndGet();
    }

    /** Whether exclusive acquisitions and hand-offs leave their token to be asked for. */
    boolean tokensOnRequest() {
        return tokensOnRequest;
    }

    /** How long a fair waiter or a waiting writer keeps its place without asking again. */
    long waiterTimeoutNanos() {
        return waiterTimeoutNanos;
    }

    /**
     * The last token issued for {@code key} by a lock of any kind (0 when none is remembered), as Redis keeps one
     * fencing counter per key: a lease whose token it is was not followed by any acquisition of the key.
     */
    long lastTokenOf(String key) {
        return Math.max(exclusive.lastToken(key), Math.max(readWrite.lastToken(key), permits.lastToken(key)));
    }

    /** A lease must last at least a millisecond: the Redis store refuses shorter ones too. */
    static long leaseNanos(long leaseMillis) {
        if (leaseMillis < 1) {
            throw new IllegalArgumentException("leaseMillis must be at least 1, was " + leaseMillis);
        }
        return TimeUnit.MILLISECONDS.toNanos(leaseMillis);
    }

    static long ceilMillis(long nanos) {
        return (nanos + TimeUnit.MILLISECONDS.toNanos(1) - 1) / TimeUnit.MILLISECONDS.toNanos(1);
    }

    /**
     * Release notices in this JVM: waiters of a key are woken on the releasing thread, right after the key became free;
     * every listener is active from the start (there is no store connection to wait for).
     */
    private static final class Notices implements ReleaseNotices {

        private final KeyListeners<KeyListeners.Listener> listeners = new KeyListeners<>();

        @Override
        public Subscription subscribe(String key, Runnable onRelease) {
            return listeners.add(new KeyListeners.Listener(key, onRelease));
        }

        void released(String key) {
            listeners.wake(key, "release");
        }

        void releasedAll() {
            listeners.wakeAll("restart");
        }
    }

    /** Configures an {@link InMemoryLockBackend}. */
    public static final class Builder {
        private LongSupplier clock = System::nanoTime;
        private Duration fairWaiterTimeout = DEFAULT_FAIR_WAITER_TIMEOUT;
        private boolean fencingTokensOnRequest;

        private Builder() {
        }

        /**
         * How long a fair waiter, or a writer waiting for readers to leave, keeps its place without asking again
         * (default 3 s): the longest a waiter that died delays the others. Live waiters ask every third of it.
         */
        public Builder fairWaiterTimeout(Duration timeout) {
            Objects.requireNonNull(timeout, "fairWaiterTimeout");
            if (timeout.compareTo(Duration.ofMillis(3)) < 0) {
                throw new IllegalArgumentException("fairWaiterTimeout must be at least 3 ms, was " + timeout);
            }
            this.fairWaiterTimeout = timeout;
            return this;
        }

        /**
         * The store's clock in nanoseconds, read like {@link System#nanoTime()} (only differences count);
         * leases run out by it. A test that moves it forward lets leases run out without waiting. Must be
         * thread-safe and never go backwards. The lock manager keeps its own view of a lease on
         * {@code System.nanoTime()}.
         */
        public Builder clock(LongSupplier nanoClock) {
            this.clock = Objects.requireNonNull(nanoClock, "clock");
            return this;
        }

        /**
         * Whether exclusive acquisitions and hand-offs take the key without a fencing token, which the store then
         * issues when the holder first asks ({@link TokensOnRequest#issueFencingToken}) or with the acquisition when that
         * asks for it ({@code issueToken}), as the Redis store does (default false: every acquisition issues one). A
         * release then answers {@link ReleaseResult#ALREADY_FREE} only when it repeats the owner's own release; a lease
         * that ran out untaken answers {@link ReleaseResult#NOT_OWNER}.
         */
        public Builder fencingTokensOnRequest(boolean onRequest) {
            this.fencingTokensOnRequest = onRequest;
            return this;
        }

        /** Builds the store. */
        public InMemoryLockBackend build() {
            return new InMemoryLockBackend(clock, fairWaiterTimeout, fencingTokensOnRequest);
        }
    }
}
