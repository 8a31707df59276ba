package dev.dlock.core.spi;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockKind;
import java.util.List;

/**
 * The lock store SPI: one implementation per store, used only by the engine ({@code LockManager}). Required:
 * acquire, release, renew and ping; everything else a store can do it declares in one place,
 * {@link #capabilities()}, by giving the object that does it (see {@link BackendCapabilities} for why it is the only
 * way). {@link #withdraw}, {@link #shorten} and {@link #close} have defaults that are right for a store that needs
 * nothing more.
 *
 * <p>Every write compares the owner token first and is atomic in the store. "Not acquired",
 * "not owner" and "lost" are normal results, never exceptions; an implementation throws
 * {@link LockBackendException} only when the store cannot be reached or answers with an error.
 * Keys passed here are logical keys, already validated by the engine; the backend maps them to
 * its own key layout. What each store does beyond this contract is in its own docs (docs/stores.md, docs/jdbc.md,
 * docs/zookeeper.md).
 */
public interface LockBackend extends AutoCloseable {

    /**
     * Takes {@code key} for {@code owner} as a lock of {@code kind} for {@code leaseMillis}, or reports who holds it
     * for how long.
     *
     * <p>Must be idempotent for its owner: a client library may run the same call twice after a lost
     * reply, so when {@code key} is already held by {@code owner} the answer is {@code Acquired} (lease
     * extended to {@code leaseMillis}, fencing token larger than every one issued before), never "held".
     * For a shared kind, "held" means the key has no free share (or a writer holds or awaits it); the remaining
     * TTL tells the caller when to ask again at the latest (a fair or writer's wait keeps its place only while it
     * asks again in time). The engine sends only kinds the store {@linkplain BackendCapabilities#modes() declares}; a
     * store that takes exclusive locks only refuses others with {@link BackendCapabilities#requireExclusive}.
     */
    AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis);

    /**
     * As {@link #tryAcquire(LockKind, String, String, long)}; with {@code issueToken} the holder will read its fencing
     * token, so a store that otherwise leaves it to be asked for ({@link AcquireResult.Acquired#TOKEN_ON_REQUEST}) issues it
     * with this acquisition, in the same store call and by the same rule (owner-checked and atomic with the take, so a
     * refused attempt issues none). False leaves the token to the store's own way. Default: the call without it, for a
     * store that issues every token with its acquisition (the engine then never needs {@link TokensOnRequest}).
     */
    default AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis, boolean issueToken) {
        return tryAcquire(kind, key, owner, leaseMillis);
    }

    /**
     * Releases {@code key}, a lock of {@code kind}, if, and only if, {@code owner} holds it, and tells waiters it
     * is free. {@code fencingToken} is the token the acquisition got, or {@link AcquireResult.Acquired#TOKEN_ON_REQUEST}
     * when none was issued; a store may ignore it.
     *
     * <p>Must be idempotent: when the key is already free because this owner's own release freed it (a repeated
     * release after a lost reply, or a client retry), the answer is {@link ReleaseResult#ALREADY_FREE}, so that a
     * repeated release is never mistaken for a lost lease. When the lease was lost instead (another owner holds the
     * key, or took it after the lease ran out or was freed by force), the answer is {@link ReleaseResult#NOT_OWNER},
     * whether or not that owner still holds it. A shared kind (read, permits) answers per share: a share the owner no
     * longer holds is {@code ALREADY_FREE} only when its own release freed it, and {@code NOT_OWNER} when the store lost
     * it (a restart without persistence, a failover, a forced release), whether or not a writer took the key since:
     * "not a holder" alone proves nothing. (Another owner that took the key after the owner's own release landed
     * began after the owner's section ended: the repeat may answer either then.) A lease that ran out with nobody taking
     * the key since may answer either: {@code ALREADY_FREE} from a store that can tell that no acquisition followed
     * (by its token sequence), {@code NOT_OWNER} from one that recognises only the owner's own recorded release; the
     * engine counts {@code ALREADY_FREE} as a release only while the lease surely lived, and as a lost lease after
     * that. A store with {@linkplain BackendCapabilities#sessionLeases() session-kept leases} may instead tell a repeat
     * by its backend's own record of the lease: {@code ALREADY_FREE} while the first attempt's outcome is unknown,
     * {@code NOT_OWNER} once the release was confirmed (the engine never sends a release again after a confirmed one).
     * Each store's docs say which it does.
     */
    ReleaseResult release(LockKind kind, String key, String owner, long fencingToken);

    /**
     * Extends every lease of the batch whose owner still matches, in one call to the store.
     *
     * <p>The engine only passes batches within the {@linkplain BackendCapabilities#renewalGrouping() grouping}'s batch
     * size whose leases share one node, and may call this from several threads at once for different
     * nodes. Each request names its lock's kind (only kinds the store {@linkplain BackendCapabilities#modes() takes});
     * the result has one entry per request, in order. Never called when the store offers
     * {@linkplain BackendCapabilities#sessionLeases() session-kept leases}.
     */
    List<RenewalResult> renew(List<LeaseRenewal> batch);

    /**
     * What the store offers beyond the required methods, asked once per manager. Default:
     * {@link BackendCapabilities#DEFAULT}, exclusive locks and fencing tokens, nothing optional.
     */
    default BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT;
    }

    /**
     * Gives up the place {@code owner} keeps in {@code key}'s queue between attempts, for a store that
     * queues waiters, or a fair waiter's or waiting writer's place for a lock of {@code kind}; the engine
     * calls it once when an acquisition ends without the key (wait over, aborted, interrupted, or failed).
     * Must not throw. Default: nothing, the store keeps no place.
     */
    default void withdraw(LockKind kind, String key, String owner) {
    }

    /**
     * Shortens {@code owner}'s lease of {@code kind} on {@code key} to {@code keepMillis} from now and, in the same
     * atomic step, makes {@code retiredOwner} its owner: the key stays taken until then (a release before
     * {@code lockAtLeastFor} ran out) and frees itself in the store, while no command still on its way for
     * {@code owner} (a renewal that timed out at the client and was retried, say) can extend it again. Answers
     * {@link RenewalResult#RENEWED} when done (also when the key is already held by {@code retiredOwner}: this call
     * ran before), otherwise what a renewal would answer.
     *
     * <p>Default, for a store that cannot rewrite its owner: a renewal of {@code owner} to {@code keepMillis}, which
     * a late renewal of the same owner can still undo (each store's docs say which it does).
     */
    default RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        return renew(List.of(new LeaseRenewal(key, owner, keepMillis, kind))).get(0);
    }

    /** Checks that the store answers; returns the round trip in nanoseconds, throws {@link LockBackendException} if not. */
    long ping();

    /** Frees the backend's own resources (subscriber connection, threads); never the client it was given. */
    @Override
    default void close() {
    }
}
