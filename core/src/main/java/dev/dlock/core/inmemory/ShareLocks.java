package dev.dlock.core.inmemory;

import dev.dlock.core.LockKind;
import dev.dlock.core.PermitsMismatchException;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoredHolder;

import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The in-memory store's locks of one family with several holders: the read/write lock of each key (writer, readers,
 * the writer waiting for readers to leave), or each key's permits (holders only). One record per key, changed only
 * inside the map's compute of that key; kept while idle, as the exclusive records are, until the store's sweep
 * forgets it.
 */
final class ShareLocks extends KeyRecords<ShareLocks.Shares> {

    private final InMemoryLockBackend store;

    ShareLocks(InMemoryLockBackend store) {
        super(shares -> shares.lastToken, Shares::forgettableAt);
        this.store = store;
    }

    /** A read, write or permit acquisition; true in {@code created} when the key had no record. */
    AcquireResult acquire(LockKind kind, String key, String owner, long leaseNanos, boolean[] created) {
        AcquireResult[] result = new AcquireResult[1];
        records.compute(key, (k, existing) -> {
            long now = store.now();
            created[0] = existing == null;
            Shares shares = existing != null ? existing : new Shares(now);
            shares.purge(now);
            if (kind.mode() == LockKind.Mode.PERMITS) {
                if (!shares.holders.isEmpty() && shares.permits != kind.permits() && shares.permits != 0) {
                    // Thrown out of compute: the record stays as it was, nothing taken.
                    throw new PermitsMismatchException(key, shares.permits, kind.permits());
                }
            }
            long wait = kind.mode() == LockKind.Mode.WRITE ? shares.writeRefusal(owner, now, store.waiterTimeoutNanos())
                    : shares.shareRefusal(kind, owner, now);
            if (wait >= 0) {
                result[0] = new AcquireResult.Held(InMemoryLockBackend.ceilMillis(wait));
                return shares;
            }
            long token = store.nextToken();
            shares.lastToken = token;
            if (kind.mode() == LockKind.Mode.WRITE) {
                shares.writer = owner;
                shares.writerEndsAtNanos = now + leaseNanos;
                if (owner.equals(shares.waitingWriter)) {
                    shares.waitingWriter = null;
                }
            } else {
                shares.holders.put(owner, now + leaseNanos);
                if (kind.mode() == LockKind.Mode.PERMITS) {
                    shares.permits = kind.permits();
                }
            }
            shares.busyUntil(now + leaseNanos);
            result[0] = new AcquireResult.Acquired(token);
            return shares;
        });
        return result[0];
    }

    /** Releases {@code owner}'s lease of {@code kind}; tells a repeated release from a lost share. */
    ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        ReleaseResult[] result = new ReleaseResult[1];
        update(key, (shares, now) -> {
            if (kind.mode() == LockKind.Mode.WRITE) {
                if (owner.equals(shares.writer)) {
                    shares.writer = null;
                    result[0] = ReleaseResult.RELEASED;
                } else {
                    // As for an exclusive lock: free with no acquisition since this owner's token is a repeat.
                    result[0] = shares.writer == null && store.lastTokenOf(key) == fencingToken ? ReleaseResult.ALREADY_FREE
                            : ReleaseResult.NOT_OWNER;
                }
            } else if (shares.holders.remove(owner) != null) {
                shares.recordRelease(owner, now);
                result[0] = ReleaseResult.RELEASED;
            } else {
                // Not a holder: its own recorded release repeated, or a share that ran out with no acquisition of the
                // key since, is free; any other was lost (a forced release, or close(): the store restarted).
                result[0] = shares.releasedBy(owner, now) || store.lastTokenOf(key) == fencingToken ? ReleaseResult.ALREADY_FREE
                        : ReleaseResult.NOT_OWNER;
            }
        });
        // No record: never taken, or forgotten since it became free; nothing proves the release is a repeat.
        return result[0] == null ? ReleaseResult.NOT_OWNER : result[0];
    }

    /** Gives {@code owner}'s lease of {@code kind} to {@code retiredOwner} with {@code keepNanos} left, in one step. */
    RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepNanos) {
        RenewalResult[] result = {RenewalResult.EXPIRED};
        update(key, (shares, now) -> {
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
        });
        return result[0];
    }

    /** The key's next token while {@code owner} holds it as {@code kind}; 0 (nothing issued) when it does not. */
    long issueToken(LockKind kind, String key, String owner) {
        long[] issued = {0};
        update(key, (shares, now) -> {
            if (kind.mode() == LockKind.Mode.WRITE ? owner.equals(shares.writer) : shares.holders.containsKey(owner)) {
                issued[0] = store.nextToken();
                shares.lastToken = issued[0];
            }
        });
        return issued[0];
    }

    /** Renews one read, write or permit lease by {@code leaseNanos} from now. */
    RenewalResult renew(LockKind kind, String key, String owner, long leaseNanos) {
        RenewalResult[] result = {RenewalResult.EXPIRED};
        update(key, (shares, now) -> {
            if (kind.mode() == LockKind.Mode.WRITE) {
                if (owner.equals(shares.writer)) {
                    shares.writerEndsAtNanos = now + leaseNanos;
                    shares.busyUntil(now + leaseNanos);
                    result[0] = RenewalResult.RENEWED;
                } else if (shares.writer != null) {
                    result[0] = RenewalResult.TAKEN;
                }
            } else if (shares.holders.containsKey(owner)) {
                shares.holders.put(owner, now + leaseNanos);
                shares.busyUntil(now + leaseNanos);
                result[0] = RenewalResult.RENEWED;
            }
        });
        return result[0];
    }

    /** A waiting writer gives up its place, so that new readers are let in again. */
    void withdrawWriter(String key, String owner) {
        records.computeIfPresent(key, (k, shares) -> {
            if (owner.equals(shares.waitingWriter)) {
                shares.waitingWriter = null;
            }
            return shares;
        });
    }

    /**
     * The key's holders of {@code kind} with their remaining leases; when {@code free}, an operator's forced release:
     * they are removed and a token is used up, so that their releases are refused.
     */
    void visit(LockKind kind, String key, boolean free, List<StoredHolder> found) {
        records.computeIfPresent(key, (k, shares) -> {
            long now = store.now();
            if (kind.mode() == LockKind.Mode.WRITE) {
                if (shares.writer != null && now - shares.writerEndsAtNanos < 0) {
                    found.add(new StoredHolder(shares.writer, InMemoryLockBackend.ceilMillis(shares.writerEndsAtNanos - now)));
                    if (free) {
                        shares.writer = null;
                    }
                }
            } else {
                for (Map.Entry<String, Long> holder : shares.holders.entrySet()) {
                    if (now - holder.getValue() < 0) {
                        found.add(new StoredHolder(holder.getKey(), InMemoryLockBackend.ceilMillis(holder.getValue() - now)));
                    }
                }
                if (free) {
                    shares.holders.clear();
                }
            }
            if (free && !found.isEmpty()) {
                shares.lastToken = store.nextToken();
            }
            return shares;
        });
    }

    /**
     * Runs {@code change} with the key's record and the store's time, inside the record's compute, once the record's
     * run-out holders and writers are purged; nothing when the key has no record.
     */
    private void update(String key, Change change) {
        records.computeIfPresent(key, (k, shares) -> {
            long now = store.now();
            shares.purge(now);
            change.apply(shares, now);
            return shares;
        });
    }

    /** A change to one key's record at the store's time {@code now}. */
    private interface Change {
        void apply(Shares shares, long now);
    }


    /**
     * A read/write lock (writer, readers, the writer waiting for readers to leave) or a key's permits (holders only),
     * with the last token it issued, which it keeps while idle, and the readers or permit holders released lately.
     */
    static final class Shares {
        final Map<String, Long> holders = new HashMap<>();
        /**
         * Owner to when its release landed, oldest first: one record per released share, since many sharers release
         * at once, so that a repeated release is told from a lost share. Kept for the idle retention, at most
         * {@link InMemoryLockBackend#MAX_SHARE_RELEASE_RECORDS}.
         */
        final LinkedHashMap<String, Long> released = new LinkedHashMap<>();
        String writer;
        long writerEndsAtNanos;
        String waitingWriter;
        long waitingWriterEndsAtNanos;
        /** Volatile: a release of another kind of the key reads it outside this record's compute. */
        volatile long lastToken;
        /** How many permits the holders took the key with (0 before the first): a different number is refused. */
        int permits;
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
            return now - busyUntilNanos > InMemoryLockBackend.IDLE_RECORD_RETENTION_NANOS;
        }

        void recordRelease(String owner, long now) {
            forgetReleasesBefore(now - InMemoryLockBackend.IDLE_RECORD_RETENTION_NANOS);
            released.put(owner, now);
            if (released.size() > InMemoryLockBackend.MAX_SHARE_RELEASE_RECORDS) {
                released.remove(released.keySet().iterator().next());
            }
        }

        boolean releasedBy(String owner, long now) {
            forgetReleasesBefore(now - InMemoryLockBackend.IDLE_RECORD_RETENTION_NANOS);
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
}
