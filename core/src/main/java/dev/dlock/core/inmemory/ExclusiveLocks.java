package dev.dlock.core.inmemory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoredHolder;

import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The in-memory store's exclusive lock of each key, which exclusive and fair acquisitions share, and the key's fair
 * waiters in arrival order. One record per key, changed only inside the map's compute of that key (the fair queue
 * too); kept while idle for the retention, so that a repeated release is told from a lost lease.
 */
final class ExclusiveLocks extends KeyRecords<ExclusiveLocks.KeyRecord> {

    private final InMemoryLockBackend store;
    /** Fair waiters per key, changed only inside {@code records.compute} of that key. */
    private final ConcurrentHashMap<String, FairQueue> fairQueues = new ConcurrentHashMap<>();

    ExclusiveLocks(InMemoryLockBackend store) {
        super(KeyRecord::token, KeyRecord::forgettableAt);
        this.store = store;
    }

    /**
     * The state of one key. {@code owner} is null once released; {@code endsAtNanos} is when the lease
     * runs out, or when the key was released. The key is held while the owner is set and the end is ahead.
     * {@code othersWaiting}: another owner was refused the key while this owner held it. {@code releasedBy}: the
     * owner whose release freed the key last (null when it ran out or was forced free), which tells a repeated
     * release when tokens are issued on request.
     */
    record KeyRecord(String owner, long token, long endsAtNanos, boolean othersWaiting, String releasedBy) {

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
            return now - endsAtNanos > InMemoryLockBackend.IDLE_RECORD_RETENTION_NANOS;
        }
    }

    /**
     * An exclusive acquisition, its token issued now unless the store leaves it to be asked for and {@code issueToken}
     * is false; true in {@code created} when the key had no record.
     */
    AcquireResult acquire(String key, String owner, long leaseNanos, boolean issueToken, boolean[] created) {
        AcquireResult[] result = new AcquireResult[1];
        records.compute(key, (k, current) -> {
            long now = store.now();
            if (current != null && current.heldAt(now) && !current.owner.equals(owner)) {
                result[0] = new AcquireResult.Held(InMemoryLockBackend.ceilMillis(current.endsAtNanos - now));
                return current.waitedFor();
            }
            // Free, run out, or already this owner's (a repeated call): the owner holds it now, with a new token.
            created[0] = current == null;
            if (store.tokensOnRequest() && !issueToken) {
                result[0] = AcquireResult.Acquired.tokenOnRequest();
                return new KeyRecord(owner, current == null ? 0 : current.token, now + leaseNanos);
            }
            long token = store.nextToken();
            result[0] = new AcquireResult.Acquired(token);
            return new KeyRecord(owner, token, now + leaseNanos);
        });
        return result[0];
    }

    /**
     * A fair acquisition: the key goes to the longest-waiting live waiter. Each call records that the owner
     * still waits; an owner that has not asked for the waiter timeout loses its place.
     */
    AcquireResult acquireFair(String key, String owner, long leaseNanos) {
        AcquireResult[] result = new AcquireResult[1];
        long waiterTimeoutNanos = store.waiterTimeoutNanos();
        records.compute(key, (k, current) -> {
            long now = store.now();
            FairQueue queue = fairQueues.computeIfAbsent(key, q -> new FairQueue());
            queue.dropSilent(now - waiterTimeoutNanos);
            boolean mine = current != null && current.heldBy(owner, now);
            boolean free = current == null || !current.heldAt(now);
            if (mine || (free && queue.isNext(owner))) {
                queue.waiters.remove(owner);
                if (queue.waiters.isEmpty()) {
                    fairQueues.remove(key);
                }
                long token = store.nextToken();
                result[0] = new AcquireResult.Acquired(token);
                return new KeyRecord(owner, token, now + leaseNanos);
            }
            queue.waiters.put(owner, now);
            long askAgain = waiterTimeoutNanos / 3;
            result[0] = new AcquireResult.Held(InMemoryLockBackend.ceilMillis(free ? askAgain
                    : Math.min(askAgain, current.endsAtNanos - now)), queue.ahead(owner));
            return free ? current : current.waitedFor();
        });
        return result[0];
    }

    /** Releases the key if {@code owner} holds it; tells a repeated release from a lost lease. */
    ReleaseResult release(String key, String owner, long fencingToken) {
        ReleaseResult[] result = new ReleaseResult[1];
        records.computeIfPresent(key, (k, current) -> {
            long now = store.now();
            if (current.heldBy(owner, now)) {
                result[0] = ReleaseResult.RELEASED;
                return new KeyRecord(null, current.token, now, false, owner);
            }
            // Free with no acquisition since this owner's token: a repeated release, or a lease that ran out untaken.
            // With tokens issued on request the tokens cannot tell: only the owner's own release recorded is a repeat.
            boolean repeat = store.tokensOnRequest() ? owner.equals(current.releasedBy) : store.lastTokenOf(key) == fencingToken;
            result[0] = !current.heldAt(now) && repeat ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
            return current;
        });
        // No record: never taken, or forgotten since it became free; nothing proves the release is a repeat.
        return result[0] == null ? ReleaseResult.NOT_OWNER : result[0];
    }

    /**
     * Keeps the key taken, now by {@code nextOwner}, with a new token (unless left to be asked for and not
     * {@code issueToken}) and, when {@code leaseNanos} is positive, a new lease; a key {@code nextOwner} holds already is
     * this hand-off repeated, answered without a token when tokens are issued on request.
     */
    HandOffResult handOff(String key, String owner, String nextOwner, long leaseNanos, boolean issueToken) {
        HandOffResult[] result = {HandOffResult.NOT_HELD};
        boolean tokensOnRequest = store.tokensOnRequest();
        records.computeIfPresent(key, (k, current) -> {
            long now = store.now();
            if (current.heldBy(nextOwner, now)) {
                result[0] = new HandOffResult.Passed(tokensOnRequest ? AcquireResult.Acquired.TOKEN_ON_REQUEST : current.token,
                        current.othersWaiting);
                return current;
            }
            if (!current.heldBy(owner, now)) {
                return current;
            }
            boolean onRequest = tokensOnRequest && !issueToken;
            long token = onRequest ? current.token : store.nextToken();
            result[0] = new HandOffResult.Passed(onRequest ? AcquireResult.Acquired.TOKEN_ON_REQUEST : token,
                    current.othersWaiting);
            return new KeyRecord(nextOwner, token, leaseNanos > 0 ? now + leaseNanos : current.endsAtNanos,
                    current.othersWaiting, null);
        });
        return result[0];
    }

    /** Gives the lease to {@code retiredOwner} with {@code keepNanos} left, in one step. */
    RenewalResult shorten(String key, String owner, String retiredOwner, long keepNanos) {
        RenewalResult[] result = {RenewalResult.EXPIRED};
        records.computeIfPresent(key, (k, current) -> {
            long now = store.now();
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

    /** The key's next token while {@code owner} holds it; 0 (nothing issued) when it does not. */
    long issueToken(String key, String owner) {
        long[] issued = {0};
        records.computeIfPresent(key, (k, current) -> {
            if (!current.heldBy(owner, store.now())) {
                return current;
            }
            issued[0] = store.nextToken();
            return current.withToken(issued[0]);
        });
        return issued[0];
    }

    /** Extends {@code owner}'s lease by {@code leaseNanos} from now. */
    RenewalResult renew(String key, String owner, long leaseNanos) {
        RenewalResult[] result = {RenewalResult.EXPIRED};
        records.computeIfPresent(key, (k, current) -> {
            long now = store.now();
            if (!current.heldAt(now)) {
                return current;
            }
            if (!current.owner.equals(owner)) {
                result[0] = RenewalResult.TAKEN;
                return current;
            }
            result[0] = RenewalResult.RENEWED;
            return new KeyRecord(current.owner, current.token, now + leaseNanos, current.othersWaiting, null);
        });
        return result[0];
    }

    /** A fair waiter gives up its place. */
    void withdrawFair(String key, String owner) {
        records.compute(key, (k, current) -> {
            FairQueue queue = fairQueues.get(key);
            if (queue != null && queue.waiters.remove(owner) != null && queue.waiters.isEmpty()) {
                fairQueues.remove(key);
            }
            return current;
        });
    }

    /**
     * The key's holder with its remaining lease (none when free); when {@code free}, an operator's forced release:
     * the lease ends and a token is used up, so that the removed holder's release is refused.
     */
    void visit(String key, boolean free, List<StoredHolder> found) {
        records.computeIfPresent(key, (k, current) -> {
            long now = store.now();
            if (!current.heldAt(now)) {
                return current;
            }
            found.add(new StoredHolder(current.owner, InMemoryLockBackend.ceilMillis(current.endsAtNanos - now)));
            return free ? new KeyRecord(null, store.nextToken(), now) : current;
        });
    }

    /** Forgets every lock and waiter. */
    @Override
    void clear() {
        super.clear();
        fairQueues.clear();
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
}
