package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import java.time.Duration;
import java.util.Objects;
import java.util.function.BooleanSupplier;

/**
 * What to lock and how: key, kind, static name, wait time, lease, the shortest hold, an optional abort condition, and
 * whether the holder reads its fencing token. Immutable; build with {@link #builder(String)}.
 */
public final class LockRequest {

    /** The name used when a request does not give one. */
    public static final String DEFAULT_NAME = "default";
    /** How often a waiter re-checks its abort condition when no release notice comes. */
    public static final Duration DEFAULT_ABORT_CHECK_INTERVAL = Duration.ofMillis(100);
    /**
     * The shortest lease of any kind, fixed or watchdog-managed: a watched lease is renewed every third of it,
     * and a lease of either kind must outlast the store call that grants it.
     */
    public static final Duration MIN_LEASE_TIME = Duration.ofMillis(30);

    private final String key;
    private final LockKind kind;
    private final String name;
    private final @Nullable Duration waitTime;
    private final @Nullable Duration leaseTime;
    private final @Nullable Duration lockAtLeastFor;
    private final @Nullable BooleanSupplier abortIf;
    private final Duration abortCheckInterval;
    private final @Nullable String callSite;
    private final boolean readsFencingToken;
    private final boolean stopWorkOnLeaseLost;

    private LockRequest(Builder builder) {
        this.key = builder.key;
        this.kind = builder.kind;
        this.name = builder.name;
        this.waitTime = builder.waitTime;
        this.leaseTime = builder.leaseTime;
        this.lockAtLeastFor = builder.lockAtLeastFor;
        this.abortIf = builder.abortIf;
        this.abortCheckInterval = builder.abortCheckInterval;
        this.callSite = builder.callSite;
        this.readsFencingToken = builder.readsFencingToken;
        this.stopWorkOnLeaseLost = builder.stopWorkOnLeaseLost;
    }

    /** Starts a request for {@code key}; the key is validated when the request is used. */
    public static Builder builder(String key) {
        return new Builder(key);
    }

    /** The logical key to lock. */
    public String key() {
        return key;
    }

    /** What kind of lock to take; {@link LockKind#EXCLUSIVE} unless set. */
    public LockKind kind() {
        return kind;
    }

    /** The lock's static name, used as the metrics tag. */
    public String name() {
        return name;
    }

    /** How long to wait for a held key; null means the manager's default. */
    public @Nullable Duration waitTime() {
        return waitTime;
    }

    /** A fixed lease with no renewal; null means a watchdog-managed lease. */
    public @Nullable Duration leaseTime() {
        return leaseTime;
    }

    /**
     * How long after acquisition the key stays taken even when released earlier, so that a job run
     * on one node is not run again by a node that comes a moment later; null for none.
     */
    public @Nullable Duration lockAtLeastFor() {
        return lockAtLeastFor;
    }

    /** Gives up the attempt when it returns true; null when there is none. */
    public @Nullable BooleanSupplier abortIf() {
        return abortIf;
    }

    /** How often a waiting thread re-checks {@link #abortIf()}. */
    public Duration abortCheckInterval() {
        return abortCheckInterval;
    }

    /** Who takes the lock, for lock-order warnings (the aspect gives the method); null when not given. */
    public @Nullable String callSite() {
        return callSite;
    }

    /**
     * Whether the holder will read its fencing token: a store that issues tokens only when asked (Redis, exclusive locks)
     * then issues it with the acquisition, in the same round trip, instead of one more round trip at the first read.
     */
    public boolean readsFencingToken() {
        return readsFencingToken;
    }

    /** Whether a blocking acquisition interrupts its thread when the lease is lost ({@link Builder#stopWorkOnLeaseLost}). */
    public boolean stopWorkOnLeaseLost() {
        return stopWorkOnLeaseLost;
    }

    /** Builds a {@link LockRequest}. */
    public static final class Builder {
        private final String key;
        private LockKind kind = LockKind.EXCLUSIVE;
        private String name = DEFAULT_NAME;
        private @Nullable Duration waitTime;
        private @Nullable Duration leaseTime;
        private @Nullable Duration lockAtLeastFor;
        private @Nullable BooleanSupplier abortIf;
        private Duration abortCheckInterval = DEFAULT_ABORT_CHECK_INTERVAL;
        private @Nullable String callSite;
        private boolean readsFencingToken;
        private boolean stopWorkOnLeaseLost;

        private Builder(String key) {
            this.key = key;
        }

        /** Sets the lock's static name (bounded: never put ids in it). */
        public Builder name(String name) {
            if (name == null || name.isBlank()) {
                throw new IllegalArgumentException("lock name must not be blank");
            }
            this.name = name;
            return this;
        }

        /** Sets the kind of lock: read or write side, permits, fair; exclusive by default. */
        public Builder kind(LockKind kind) {
            this.kind = Objects.requireNonNull(kind, "kind");
            return this;
        }

        /** Sets how long to wait; {@link Duration#ZERO} tries once. */
        public Builder waitTime(Duration waitTime) {
            this.waitTime = validWaitTime(waitTime);
            return this;
        }

        /** Sets a fixed lease that is never renewed (at least {@link LockRequest#MIN_LEASE_TIME}); null restores the watchdog-managed lease. */
        public Builder leaseTime(@Nullable Duration leaseTime) {
            this.leaseTime = validLeaseTime(leaseTime);
            return this;
        }

        /**
         * Keeps the key taken until at least {@code lockAtLeastFor} after acquisition, even when released
         * earlier (a release then only shortens the lease to what is left); null for none. With a fixed
         * lease it must not exceed the lease.
         */
        public Builder lockAtLeastFor(@Nullable Duration lockAtLeastFor) {
            this.lockAtLeastFor = validLockAtLeastFor(lockAtLeastFor, leaseTime);
            return this;
        }

        /** Sets a condition checked before waiting, at every wake-up, and once after acquiring. */
        public Builder abortIf(@Nullable BooleanSupplier abortIf) {
            this.abortIf = abortIf;
            return this;
        }

        /** Sets how often a waiter re-checks the abort condition when no release notice arrives. */
        public Builder abortCheckInterval(Duration interval) {
            this.abortCheckInterval = validAbortCheckInterval(interval);
            return this;
        }

        /**
         * Names who takes the lock, such as {@code OrderService.transfer(..)}, in lock-order warnings (bounded: a
         * code location, never an id); without it the warning names the first caller outside dlock.
         */
        public Builder callSite(@Nullable String callSite) {
            this.callSite = callSite;
            return this;
        }

        /**
         * Says whether the holder will read its fencing token ({@link LockHandle#fencingToken()}, a fencing guard); default
         * false. When true, a store that issues tokens only when asked (Redis, exclusive locks) issues it with the
         * acquisition, and with a local hand-off to this holder, in the same round trip: a fenced hold costs two round
         * trips (acquire, release) instead of three. The token is as strong either way; false still gets one, issued at the
         * first read.
         */
        public Builder readsFencingToken(boolean reads) {
            this.readsFencingToken = reads;
            return this;
        }

        /**
         * Stops the holder's work when the lease is lost (default false): {@link LockManager#acquire},
         * {@link LockManager#tryAcquire} and {@link LockManager#withLock} arm {@link LockHandle#interruptOnLeaseLost()} for
         * the acquiring thread, until the handle is closed or detached from it. An asynchronous holder arms its own
         * reaction with {@link LockHandle#onLeaseLost}; {@link LockManager#acquireAsync} arms none.
         */
        public Builder stopWorkOnLeaseLost(boolean stop) {
            this.stopWorkOnLeaseLost = stop;
            return this;
        }

        /**
         * Builds the request.
         *
         * @throws IllegalArgumentException when {@code lockAtLeastFor} exceeds the fixed lease
         */
        public LockRequest build() {
            validLockAtLeastFor(lockAtLeastFor, leaseTime);
            return new LockRequest(this);
        }
    }

    /**
     * Returns {@code interval} when it is a valid {@link #abortCheckInterval()} (positive), for
     * builders that keep an interval to hand to every request they make.
     *
     * @throws IllegalArgumentException when {@code interval} is zero or negative
     */
    public static Duration validAbortCheckInterval(Duration interval) {
        Objects.requireNonNull(interval, "abortCheckInterval");
        if (interval.isZero() || interval.isNegative()) {
            throw new IllegalArgumentException("abortCheckInterval must be positive, was " + interval);
        }
        return interval;
    }

    /**
     * Returns {@code leaseTime} when it is a valid lease: null (here: a watchdog-managed lease) or at least
     * {@link #MIN_LEASE_TIME}. The one rule for every lease: a request's or an annotation's fixed lease, and
     * the manager's watchdog-managed lease ({@code dlock.lease-time}); for code that checks a lease long
     * before it builds requests (the aspect's startup validation) too.
     *
     * @throws IllegalArgumentException when {@code leaseTime} is shorter than {@link #MIN_LEASE_TIME}
     */
    public static @Nullable Duration validLeaseTime(@Nullable Duration leaseTime) {
        if (leaseTime != null && leaseTime.compareTo(MIN_LEASE_TIME) < 0) {
            throw new IllegalArgumentException("leaseTime must be at least " + MIN_LEASE_TIME.toMillis() + " ms, was "
                    + leaseTime + ": a shorter lease can run out in the store before the reply that grants it "
                    + "arrives, and a watchdog-managed one is renewed every third of it");
        }
        return leaseTime;
    }

    /**
     * Returns {@code lockAtLeastFor} when it is a valid {@link #lockAtLeastFor()} for {@code leaseTime}:
     * null, or at least a millisecond and, with a fixed lease, no longer than it; for the aspect's
     * startup validation too.
     *
     * @throws IllegalArgumentException otherwise
     */
    public static @Nullable Duration validLockAtLeastFor(@Nullable Duration lockAtLeastFor, @Nullable Duration leaseTime) {
        if (lockAtLeastFor == null) {
            return null;
        }
        if (lockAtLeastFor.compareTo(Duration.ofMillis(1)) < 0) {
            throw new IllegalArgumentException("lockAtLeastFor must be at least 1 ms, was " + lockAtLeastFor);
        }
        if (leaseTime != null && lockAtLeastFor.compareTo(leaseTime) > 0) {
            throw new IllegalArgumentException("lockAtLeastFor (" + lockAtLeastFor + ") must not exceed the fixed leaseTime ("
                    + leaseTime + "): the lease is the longest the key is held");
        }
        return lockAtLeastFor;
    }

    /** The wait time if it is not negative; shared with the manager's default wait time. */
    static Duration validWaitTime(Duration waitTime) {
        Objects.requireNonNull(waitTime, "waitTime");
        if (waitTime.isNegative()) {
            throw new IllegalArgumentException("waitTime must not be negative, was " + waitTime);
        }
        return waitTime;
    }
}
