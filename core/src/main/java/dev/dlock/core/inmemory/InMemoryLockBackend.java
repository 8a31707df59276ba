package dev.dlock.core.inmemory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.FencingTokens;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.KeyListeners;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A {@link LockBackend} that keeps its locks in this JVM's memory: for tests, and for applications
 * that run in one JVM. <b>It locks within one JVM only</b>: two JVMs (two instances of a service)
 * each have their own store and never exclude each other. Use a distributed store for that.
 *
 * <pre>{@code
 * LockManager locks = LockManager.builder(new InMemoryLockBackend()).build();
 * }</pre>
 *
 * <p>Through the SPI it behaves like the Redis store: leases run out on this store's clock; taking a
 * key its owner already holds extends the lease and issues a fresh token; fencing tokens come from
 * one counter for all keys, so they strictly increase per key for as long as this backend lives (not
 * across backends or JVM restarts); a release wakes this backend's waiters for the key at once. A key's
 * records (with the last token of each kind, which tells a repeated release from a lost lease) are kept for
 * {@value #IDLE_RECORD_RETENTION_SECONDS} s after the key became free, then forgotten: a release for it
 * then answers {@link ReleaseResult#NOT_OWNER}, as Redis does once its record of the release expired. Read leases and
 * permits are recorded per releasing owner, so a share the store no longer holds answers {@code NOT_OWNER} unless its
 * own release is recorded or it ran out with no acquisition since (a forced release, or {@link #close()}, loses it).
 * The kinds of one key share one token sequence: a lease that ran out is {@link ReleaseResult#ALREADY_FREE} at release only
 * while no lock of any kind took the key since, and {@link ReleaseResult#NOT_OWNER} after (Redis, which issues
 * exclusive tokens on request, answers {@code NOT_OWNER} for every lease that ran out unreleased).
 *
 * <p>It takes every {@link LockKind}: read/write locks with a waiting writer holding back new readers, permits,
 * and fair locks whose waiters queue in arrival order and lose their place when they stop asking for
 * {@link Builder#fairWaiterTimeout} (the kinds behave as {@link LockKind} describes, as on Redis).
 *
 * <p>It says who holds a key of any kind and frees it on an operator's order ({@link #holderInspection()}): a forced
 * release wakes the key's waiters and consumes a fencing token, so the removed holder's release is refused.
 *
 * <p>Tests can drive the store's clock with {@link Builder#clock}, so leases run out without waiting, and can have
 * exclusive locks take keys without a token ({@link Builder#fencingTokensOnRequest}), issued when the holder asks, as
 * the Redis store does.
 * Thread-safe; each key is updated atomically on its own, with no lock shared by all keys.
 */
public final class InMemoryLockBackend implements LockBackend {

    /** How long a free key's record is kept, so that a repeated release is still recognised. */
    static final long IDLE_RECORD_RETENTION_SECONDS = 60;
    private static final BackendCapabilities CAPABILITIES =
            BackendCapabilities.DEFAULT.withModes(EnumSet.allOf(LockKind.Mode.class)).withHandOff(true);
    private static final long IDLE_RECORD_RETENTION_NANOS = TimeUnit.SECONDS.toNanos(IDLE_RECORD_RETENTION_SECONDS);
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
    private final ConcurrentHashMap<String, KeyRecord> records = new ConcurrentHashMap<>();
    /** Fair waiters per key, changed only inside {@code records.compute} of that key. */
    private final ConcurrentHashMap<String, FairQueue> fairQueues = new ConcurrentHashMap<>();
    /**
     * Read/write locks and permits: one record per key and family, changed only inside the map's compute; kept while
     * idle, as the exclusive records are, until {@link #sweepIfGrown} forgets it.
     */
    private final ConcurrentHashMap<String, Shares> readWrite = new ConcurrentHashMap<>();
    private final ConcurrentHashMap<String, Shares> permits = new ConcurrentHashMap<>();
    /**
     * One counter for every key: strictly increasing per key even after a key's record was forgotten; it starts at this
     * JVM's clock in microseconds, the floor Redis's and the JDBC store's tokens start at (see {@link FencingTokens}).
     */
    private final AtomicLong lastToken = new AtomicLong(FencingTokens.clockFloorMicros());
    private final Notices notices = new Notices();
    private final Inspection inspection = new Inspection();
    private final AtomicBoolean sweeping = new AtomicBoolean();
    /** Sweeping when the record count doubled since the last sweep keeps its cost constant per new key. */
    private volatile long sweepThreshold = MIN_SWEEP_THRESHOLD;

    /**
     * The state of one key. {@code owner} is null once released; {@code endsAtNanos} is when the lease
     * runs out, or when the key was released. The key is held while the owner is set and the end is ahead.
     * {@code othersWaiting}: another owner was refused the key while this owner held it. {@code releasedBy}: the
     * owner whose release freed the key last (null when it ran out or was forced free), which tells a repeated
     * release when tokens are issued on request.
     */
    private record KeyRecord(String owner, long token, long endsAtNanos, boolean othersWaiting, String releasedBy) {

        KeyRecord(String owner, long token, long endsAtNanos) {
            this(owner, token, endsAtNanos, false, null);
        }

        KeyRecord waitedFor() {
            return othersWaiting ? this : new KeyRecord(owner, token, endsAtNanos, true, releasedBy);
        }

        KeyRecord withToken(long issued) {
            return new KeyRecord(owner, issued, endsAtNanos, othersWaiting, releasedBy);
        }

        boolean heldAt(long now) {
            return owner != null && now - endsAtNanos < 0;
        }

        boolean heldBy(String candidate, long now) {
            return heldAt(now) && owner.equals(candidate);
        }

        boolean forgettableAt(long now) {
            return now - endsAtNanos > IDLE_RECORD_RETENTION_NANOS;
        }
    }

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

    private AcquireResult tryAcquireExclusive(String key, String owner, long leaseMillis, boolean issueToken) {
        Objects.requireNonNull(owner, "owner");
        long leaseNanos = leaseNanos(leaseMillis);
        AcquireResult[] result = new AcquireResult[1];
        boolean[] created = new boolean[1];
        records.compute(key, (k, current) -> {
            long now = clock.getAsLong();
            if (current != null && current.heldAt(now) && !current.owner.equals(owner)) {
                result[0] = new AcquireResult.Held(ceilMillis(current.endsAtNanos - now));
                return current.waitedFor();
            }
            // Free, run out, or already this owner's (a repeated call): the owner holds it now, with a new token.
            created[0] = current == null;
            if (tokensOnRequest && !issueToken) {
                result[0] = AcquireResult.Acquired.tokenOnRequest();
                return new KeyRecord(owner, current == null ? 0 : current.token, now + leaseNanos);
            }
            long token = lastToken.incrementAndGet();
            result[0] = new AcquireResult.Acquired(token);
            return new KeyRecord(owner, token, now + leaseNanos);
        });
        if (created[0]) {
            sweepIfGrown();
        }
        return result[0];
    }

    private ReleaseResult releaseExclusive(String key, String owner, long fencingToken) {
        ReleaseResult[] result = new ReleaseResult[1];
        records.computeIfPresent(key, (k, current) -> {
            long now = clock.getAsLong();
            if (current.heldBy(owner, now)) {
                result[0] = ReleaseResult.RELEASED;
                return new KeyRecord(null, current.token, now, false, owner);
            }
            // Free with no acquisition since this owner's token: a repeated release, or a lease that ran out untaken.
            // With tokens issued on request the tokens cannot tell: only the owner's own release recorded is a repeat.
            boolean repeat = tokensOnRequest ? owner.equals(current.releasedBy) : lastTokenOf(key) == fencingToken;
            result[0] = !current.heldAt(now) && repeat ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
            return current;
        });
        if (result[0] == null) {
            // No record: never taken, or forgotten since it became free; nothing proves the release is a repeat.
            return ReleaseResult.NOT_OWNER;
        }
        if (result[0] == ReleaseResult.RELEASED) {
            notices.released(key);
        }
        return result[0];
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
        HandOffResult[] result = {HandOffResult.NOT_HELD};
        records.computeIfPresent(key, (k, current) -> {
            long now = clock.getAsLong();
            if (current.heldBy(nextOwner, now)) {
                result[0] = new HandOffResult.Passed(tokensOnRequest ? AcquireResult.Acquired.TOKEN_ON_REQUEST : current.token,
                        current.othersWaiting);
                return current;
            }
            if (!current.heldBy(owner, now)) {
                return current;
            }
            boolean onRequest = tokensOnRequest && !issueToken;
            long token = onRequest ? current.token : lastToken.incrementAndGet();
            result[0] = new HandOffResult.Passed(onRequest ? AcquireResult.Acquired.TOKEN_ON_REQUEST : token,
                    current.othersWaiting);
            return new KeyRecord(nextOwner, token, leaseMillis > 0 ? now + leaseNanos(leaseMillis) : current.endsAtNanos,
                    current.othersWaiting, null);
        });
        return result[0];
    }

    /** Gives the lease to {@code retiredOwner} with {@code keepMillis} left, for every kind, in one step. */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(retiredOwner, "retiredOwner");
        long keepNanos = leaseNanos(keepMillis);
        RenewalResult[] result = {RenewalResult.EXPIRED};
        if (kind.family() == LockKind.Family.EXCLUSIVE) {
            records.computeIfPresent(key, (k, current) -> {
                long now = clock.getAsLong();
                if (!current.heldAt(now)) {
                    return current;
                }
                if (current.owner.equals(retiredOwner)) {
                    result[0] = RenewalResult.RENEWED;
                    return current;
                }
                if (!current.owner.equals(owner)) {
                    result[0] = RenewalResult.TAKEN;
                    return current;
                }
                result[0] = RenewalResult.RENEWED;
                return new KeyRecord(retiredOwner, current.token, now + keepNanos, current.othersWaiting, null);
            });
            return result[0];
        }
        sharesOf(kind).computeIfPresent(key, (k, shares) -> {
            long now = clock.getAsLong();
            shares.purge(now);
            if (kind.mode() == LockKind.Mode.WRITE) {
                if (owner.equals(shares.writer)) {
                    shares.writer = retiredOwner;
                    shares.writerEndsAtNanos = now + keepNanos;
                    result[0] = RenewalResult.RENEWED;
                } else if (retiredOwner.equals(shares.writer)) {
                    result[0] = RenewalResult.RENEWED;
                } else if (shares.writer != null) {
                    result[0] = RenewalResult.TAKEN;
                }
            } else if (shares.holders.containsKey(retiredOwner)) {
                result[0] = RenewalResult.RENEWED;
            } else if (shares.holders.remove(owner) != null) {
                shares.holders.put(retiredOwner, now + keepNanos);
                result[0] = RenewalResult.RENEWED;
            }
            return shares;
        });
        return result[0];
    }

    /**
     * The key's next token from the one counter, while {@code owner} holds {@code key} as a lock of {@code kind};
     * empty (nothing issued) when it does not. Any kind works; only exclusive acquisitions and hand-offs leave it to
     * be asked for, and only when built with {@link Builder#fencingTokensOnRequest}.
     */
    @Override
    public OptionalLong issueFencingToken(LockKind kind, String key, String owner) {
        Objects.requireNonNull(owner, "owner");
        long[] issued = {0};
        if (kind.family() == LockKind.Family.EXCLUSIVE) {
            records.computeIfPresent(key, (k, current) -> {
                if (!current.heldBy(owner, clock.getAsLong())) {
                    return current;
                }
                issued[0] = lastToken.incrementAndGet();
                return current.withToken(issued[0]);
            });
        } else {
            sharesOf(kind).computeIfPresent(key, (k, shares) -> {
                shares.purge(clock.getAsLong());
                if (kind.mode() == LockKind.Mode.WRITE ? owner.equals(shares.writer) : shares.holders.containsKey(owner)) {
                    issued[0] = lastToken.incrementAndGet();
                    shares.lastToken = issued[0];
                }
                return shares;
            });
        }
        return issued[0] == 0 ? OptionalLong.empty() : OptionalLong.of(issued[0]);
    }

    /** Every kind (exclusive, fair, read, write and permits), hand-off and fencing tokens. */
    @Override
    public BackendCapabilities capabilities() {
        return CAPABILITIES;
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        return tryAcquire(kind, key, owner, leaseMillis, false);
    }

    /** As {@link #tryAcquire(LockKind, String, String, long)}; an exclusive lock issues its token now when {@code issueToken}. */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis, boolean issueToken) {
        return switch (kind.mode()) {
            case EXCLUSIVE -> tryAcquireExclusive(key, owner, leaseMillis, issueToken);
            case FAIR -> tryAcquireFair(key, owner, leaseMillis);
            case READ, PERMITS, WRITE -> tryAcquireShare(kind, key, owner, leaseMillis);
        };
    }

    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        if (kind.mode() == LockKind.Mode.EXCLUSIVE || kind.mode() == LockKind.Mode.FAIR) {
            return releaseExclusive(key, owner, fencingToken);
        }
        ReleaseResult[] result = new ReleaseResult[1];
        sharesOf(kind).computeIfPresent(key, (k, shares) -> {
            long now = clock.getAsLong();
            shares.purge(now);
            if (kind.mode() == LockKind.Mode.WRITE) {
                if (owner.equals(shares.writer)) {
                    shares.writer = null;
                    result[0] = ReleaseResult.RELEASED;
                } else {
                    // As for an exclusive lock: free with no acquisition since this owner's token is a repeat.
                    result[0] = shares.writer == null && lastTokenOf(key) == fencingToken ? ReleaseResult.ALREADY_FREE
                            : ReleaseResult.NOT_OWNER;
                }
            } else if (shares.holders.remove(owner) != null) {
                shares.recordRelease(owner, now);
                result[0] = ReleaseResult.RELEASED;
            } else {
                // Not a holder: its own recorded release repeated, or a share that ran out with no acquisition of the
                // key since, is free; any other was lost (a forced release, or close(): the store restarted).
                result[0] = shares.releasedBy(owner, now) || lastTokenOf(key) == fencingToken ? ReleaseResult.ALREADY_FREE
                        : ReleaseResult.NOT_OWNER;
            }
            return shares;
        });
        if (result[0] == null) {
            // No record: never taken, or forgotten since it became free; nothing proves the release is a repeat.
            result[0] = ReleaseResult.NOT_OWNER;
        }
        if (result[0] == ReleaseResult.RELEASED) {
            notices.released(key);
        }
        return result[0];
    }

    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        if (kind.mode() == LockKind.Mode.FAIR) {
            records.compute(key, (k, current) -> {
                FairQueue queue = fairQueues.get(key);
                if (queue != null && queue.waiters.remove(owner) != null && queue.waiters.isEmpty()) {
                    fairQueues.remove(key);
                }
                return current;
            });
        } else if (kind.mode() == LockKind.Mode.WRITE) {
            readWrite.computeIfPresent(key, (k, shares) -> {
                if (owner.equals(shares.waitingWriter)) {
                    shares.waitingWriter = null;
                }
                return shares;
            });
        }
    }

    /**
     * A fair acquisition: the key goes to the longest-waiting live waiter. Each call records that the owner
     * still waits; an owner that has not asked for {@link Builder#fairWaiterTimeout} loses its place.
     */
    private AcquireResult tryAcquireFair(String key, String owner, long leaseMillis) {
        Objects.requireNonNull(owner, "owner");
        long leaseNanos = leaseNanos(leaseMillis);
        AcquireResult[] result = new AcquireResult[1];
        records.compute(key, (k, current) -> {
            long now = clock.getAsLong();
            FairQueue queue = fairQueues.computeIfAbsent(key, q -> new FairQueue());
            queue.dropSilent(now - waiterTimeoutNanos);
            boolean mine = current != null && current.heldBy(owner, now);
            boolean free = current == null || !current.heldAt(now);
            if (mine || (free && queue.isNext(owner))) {
                queue.waiters.remove(owner);
                if (queue.waiters.isEmpty()) {
                    fairQueues.remove(key);
                }
                long token = lastToken.incrementAndGet();
                result[0] = new AcquireResult.Acquired(token);
                return new KeyRecord(owner, token, now + leaseNanos);
            }
            queue.waiters.put(owner, now);
            long askAgain = waiterTimeoutNanos / 3;
            result[0] = new AcquireResult.Held(ceilMillis(free ? askAgain : Math.min(askAgain, current.endsAtNanos - now)),
                    queue.ahead(owner));
            return free ? current : current.waitedFor();
        });
        return result[0];
    }

    /** A read, write or permit acquisition on the key's read/write or permits record. */
    private AcquireResult tryAcquireShare(LockKind kind, String key, String owner, long leaseMillis) {
        Objects.requireNonNull(owner, "owner");
        long leaseNanos = leaseNanos(leaseMillis);
        AcquireResult[] result = new AcquireResult[1];
        boolean[] created = new boolean[1];
        sharesOf(kind).compute(key, (k, existing) -> {
            long now = clock.getAsLong();
            created[0] = existing == null;
            Shares shares = existing != null ? existing : new Shares(now);
            shares.purge(now);
            long wait = kind.mode() == LockKind.Mode.WRITE ? shares.writeRefusal(owner, now, waiterTimeoutNanos)
                    : shares.shareRefusal(kind, owner, now);
            if (wait >= 0) {
                result[0] = new AcquireResult.Held(ceilMillis(wait));
                return shares;
            }
            long token = lastToken.incrementAndGet();
            shares.lastToken = token;
            if (kind.mode() == LockKind.Mode.WRITE) {
                shares.writer = owner;
                shares.writerEndsAtNanos = now + leaseNanos;
                if (owner.equals(shares.waitingWriter)) {
                    shares.waitingWriter = null;
                }
            } else {
                shares.holders.put(owner, now + leaseNanos);
            }
            shares.busyUntil(now + leaseNanos);
            result[0] = new AcquireResult.Acquired(token);
            return shares;
        });
        if (created[0]) {
            sweepIfGrown();
        }
        return result[0];
    }

    private ConcurrentHashMap<String, Shares> sharesOf(LockKind kind) {
        return kind.mode() == LockKind.Mode.PERMITS ? permits : readWrite;
    }

    /**
     * The last token issued for {@code key} by a lock of any kind (0 when none is remembered), as Redis keeps one
     * fencing counter per key: a lease whose token it is was not followed by any acquisition of the key.
     */
    private long lastTokenOf(String key) {
        KeyRecord exclusive = records.get(key);
        Shares readOrWrite = readWrite.get(key);
        Shares permit = permits.get(key);
        return Math.max(exclusive != null ? exclusive.token : 0,
                Math.max(readOrWrite != null ? readOrWrite.lastToken : 0, permit != null ? permit.lastToken : 0));
    }

    /** Renews one read, write or permit lease. */
    private RenewalResult renewShare(LeaseRenewal renewal, long leaseNanos) {
        RenewalResult[] result = {RenewalResult.EXPIRED};
        sharesOf(renewal.kind()).computeIfPresent(renewal.key(), (k, shares) -> {
            long now = clock.getAsLong();
            shares.purge(now);
            if (renewal.kind().mode() == LockKind.Mode.WRITE) {
                if (renewal.owner().equals(shares.writer)) {
                    shares.writerEndsAtNanos = now + leaseNanos;
                    shares.busyUntil(now + leaseNanos);
                    result[0] = RenewalResult.RENEWED;
                } else if (shares.writer != null) {
                    result[0] = RenewalResult.TAKEN;
                }
            } else if (shares.holders.containsKey(renewal.owner())) {
                shares.holders.put(renewal.owner(), now + leaseNanos);
                shares.busyUntil(now + leaseNanos);
                result[0] = RenewalResult.RENEWED;
            }
            return shares;
        });
        return result[0];
    }

    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        List<RenewalResult> results = new ArrayList<>(batch.size());
        for (LeaseRenewal renewal : batch) {
            long leaseNanos = leaseNanos(renewal.leaseMillis());
            if (renewal.kind().family() != LockKind.Family.EXCLUSIVE) {
                results.add(renewShare(renewal, leaseNanos));
                continue;
            }
            RenewalResult[] result = {RenewalResult.EXPIRED};
            records.computeIfPresent(renewal.key(), (k, current) -> {
                long now = clock.getAsLong();
                if (!current.heldAt(now)) {
                    return current;
                }
                if (!current.owner.equals(renewal.owner())) {
                    result[0] = RenewalResult.TAKEN;
                    return current;
                }
                result[0] = RenewalResult.RENEWED;
                return new KeyRecord(current.owner, current.token, now + leaseNanos, current.othersWaiting, null);
            });
            results.add(result[0]);
        }
        return results;
    }

    /** Waiters of a key are woken on the releasing thread, right after the key became free. */
    @Override
    public Optional<ReleaseNotices> releaseNotices() {
        return Optional.of(notices);
    }

    /** Who holds a key of any kind, and an operator's forced release. */
    @Override
    public Optional<HolderInspection> holderInspection() {
        return Optional.of(inspection);
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
                notices.released(key);
            }
            return removed;
        }

        private List<StoredHolder> visit(LockKind kind, String key, boolean free) {
            List<StoredHolder> found = new ArrayList<>();
            if (kind.family() == LockKind.Family.EXCLUSIVE) {
                records.computeIfPresent(key, (k, current) -> {
                    long now = clock.getAsLong();
                    if (!current.heldAt(now)) {
                        return current;
                    }
                    found.add(new StoredHolder(current.owner, ceilMillis(current.endsAtNanos - now)));
                    return free ? new KeyRecord(null, lastToken.incrementAndGet(), now) : current;
                });
                return found;
            }
            sharesOf(kind).computeIfPresent(key, (k, shares) -> {
                long now = clock.getAsLong();
                if (kind.mode() == LockKind.Mode.WRITE) {
                    if (shares.writer != null && now - shares.writerEndsAtNanos < 0) {
                        found.add(new StoredHolder(shares.writer, ceilMillis(shares.writerEndsAtNanos - now)));
                        if (free) {
                            shares.writer = null;
                        }
                    }
                } else {
                    for (Map.Entry<String, Long> holder : shares.holders.entrySet()) {
                        if (now - holder.getValue() < 0) {
                            found.add(new StoredHolder(holder.getKey(), ceilMillis(holder.getValue() - now)));
                        }
                    }
                    if (free) {
                        shares.holders.clear();
                    }
                }
                if (free && !found.isEmpty()) {
                    shares.lastToken = lastToken.incrementAndGet();
                }
                return shares;
            });
            return found;
        }
    }

    /** There is no round trip: returns the few nanoseconds a look at the store takes. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        records.isEmpty();
        return Math.max(1, System.nanoTime() - start);
    }

    /**
     * Forgets every lock, as a restarted store without persistence would, and wakes every waiter (their
     * keys are free now). Fencing tokens keep increasing; the backend stays usable.
     */
    @Override
    public void close() {
        records.clear();
        fairQueues.clear();
        readWrite.clear();
        permits.clear();
        notices.releasedAll();
    }

    /** How many key records the store keeps now, of every kind, held or idle. */
    int recordCount() {
        return records.size() + readWrite.size() + permits.size();
    }

    private void sweepIfGrown() {
        if (recordCount() < sweepThreshold || !sweeping.compareAndSet(false, true)) {
            return;
        }
        try {
            long now = clock.getAsLong();
            for (String key : records.keySet()) {
                records.computeIfPresent(key, (k, current) -> current.forgettableAt(now) ? null : current);
            }
            for (ConcurrentHashMap<String, Shares> family : List.of(readWrite, permits)) {
                for (String key : family.keySet()) {
                    family.computeIfPresent(key, (k, shares) -> shares.forgettableAt(now) ? null : shares);
                }
            }
            sweepThreshold = Math.max(MIN_SWEEP_THRESHOLD, 2 * recordCount());
        } finally {
            sweeping.set(false);
        }
    }

    /** A lease must last at least a millisecond: the Redis store refuses shorter ones too. */
    private static long leaseNanos(long leaseMillis) {
        if (leaseMillis < 1) {
            throw new IllegalArgumentException("leaseMillis must be at least 1, was " + leaseMillis);
        }
        return TimeUnit.MILLISECONDS.toNanos(leaseMillis);
    }

    private static long ceilMillis(long nanos) {
        return (nanos + TimeUnit.MILLISECONDS.toNanos(1) - 1) / TimeUnit.MILLISECONDS.toNanos(1);
    }

    /** Release notices in this JVM: every listener is active from the start (there is no store connection to wait for). */
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

    /** The fair waiters of one key in arrival order, with when each last asked (store clock). */
    private static final class FairQueue {
        final LinkedHashMap<String, Long> waiters = new LinkedHashMap<>();

        void dropSilent(long askedBefore) {
            waiters.values().removeIf(lastAsked -> lastAsked - askedBefore < 0);
        }

        int ahead(String owner) {
            int before = 0;
            for (String waiter : waiters.keySet()) {
                if (waiter.equals(owner)) {
                    return before;
                }
                before++;
            }
            return -1;
        }

        boolean isNext(String owner) {
            Iterator<String> first = waiters.keySet().iterator();
            return !first.hasNext() || first.next().equals(owner);
        }
    }

    /**
     * A read/write lock (writer, readers, the writer waiting for readers to leave) or a key's permits (holders only),
     * with the last token it issued, which it keeps while idle, and the readers or permit holders released lately.
     */
    private static final class Shares {
        final Map<String, Long> holders = new HashMap<>();
        /**
         * Owner to when its release landed, oldest first: one record per released share, since many sharers release
         * at once, so that a repeated release is told from a lost share. Kept for the idle retention, at most
         * {@link #MAX_SHARE_RELEASE_RECORDS}.
         */
        final LinkedHashMap<String, Long> released = new LinkedHashMap<>();
        String writer;
        long writerEndsAtNanos;
        String waitingWriter;
        long waitingWriterEndsAtNanos;
        /** Volatile: a release of another kind of the key reads it outside this record's compute. */
        volatile long lastToken;
        /** The latest end of anything this record held or awaited: it is idle from then on at the latest. */
        long busyUntilNanos;

        Shares(long now) {
            this.busyUntilNanos = now;
        }

        void busyUntil(long endsAtNanos) {
            if (endsAtNanos - busyUntilNanos > 0) {
                busyUntilNanos = endsAtNanos;
            }
        }

        boolean forgettableAt(long now) {
            return now - busyUntilNanos > IDLE_RECORD_RETENTION_NANOS;
        }

        void recordRelease(String owner, long now) {
            forgetReleasesBefore(now - IDLE_RECORD_RETENTION_NANOS);
            released.put(owner, now);
            if (released.size() > MAX_SHARE_RELEASE_RECORDS) {
                released.remove(released.keySet().iterator().next());
            }
        }

        boolean releasedBy(String owner, long now) {
            forgetReleasesBefore(now - IDLE_RECORD_RETENTION_NANOS);
            return released.containsKey(owner);
        }

        private void forgetReleasesBefore(long since) {
            Iterator<Long> oldestFirst = released.values().iterator();
            while (oldestFirst.hasNext() && oldestFirst.next() - since < 0) {
                oldestFirst.remove();
            }
        }

        void purge(long now) {
            holders.values().removeIf(endsAt -> now - endsAt >= 0);
            if (writer != null && now - writerEndsAtNanos >= 0) {
                writer = null;
            }
            if (waitingWriter != null && now - waitingWriterEndsAtNanos >= 0) {
                waitingWriter = null;
            }
        }

        /**
         * For a read or permit: -1 when {@code owner} may take a share now, otherwise how long until it should ask
         * again. Readers yield to a writer that holds the key or waits for it.
         */
        long shareRefusal(LockKind kind, String owner, long now) {
            if (holders.containsKey(owner)) {
                return -1;
            }
            if (writer != null) {
                return writerEndsAtNanos - now;
            }
            if (waitingWriter != null) {
                return waitingWriterEndsAtNanos - now;
            }
            if (holders.size() < kind.permits()) {
                return -1;
            }
            long earliest = Long.MAX_VALUE;
            for (long endsAt : holders.values()) {
                earliest = Math.min(earliest, endsAt - now);
            }
            return earliest;
        }

        /**
         * For a write: -1 when {@code owner} may take it now; otherwise how long until it should ask again. A writer
         * kept out by readers marks itself waiting, which holds back new readers for as long as it keeps asking.
         */
        long writeRefusal(String owner, long now, long waiterTimeoutNanos) {
            if (writer != null && !writer.equals(owner)) {
                return writerEndsAtNanos - now;
            }
            if (holders.isEmpty() || owner.equals(writer)) {
                return -1;
            }
            if (waitingWriter == null || waitingWriter.equals(owner)) {
                waitingWriter = owner;
                waitingWriterEndsAtNanos = now + waiterTimeoutNanos;
                busyUntil(waitingWriterEndsAtNanos);
            }
            long earliest = waiterTimeoutNanos / 3;
            for (long endsAt : holders.values()) {
                earliest = Math.min(earliest, endsAt - now);
            }
            return earliest;
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
         * issues when the holder first asks ({@link LockBackend#issueFencingToken}) or with the acquisition when that
         * asks for it ({@code issueToken}), as the Redis store does (default false: every acquisition issues one). A release then answers {@link ReleaseResult#ALREADY_FREE} only when it
         * repeats the owner's own release; a lease that ran out untaken answers {@link ReleaseResult#NOT_OWNER}.
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
