package dev.dlock.core.spi;

import dev.dlock.core.LockKind;

/**
 * Optional ability ({@link BackendCapabilities#leaseExtension()}): a held fixed lease given a new term by its holder
 * ({@code LockHandle.extend}), in one store call that rewrites the lease's owner, so that nothing sent for an earlier
 * term can change it. Absent, an extension is refused before it reaches the store.
 */
@FunctionalInterface
public interface LeaseExtension {

    /**
     * Starts a new term of {@code owner}'s live lease of {@code kind} on {@code key}: in one atomic step, sets the lease
     * to {@code leaseMillis} from now (longer or shorter than what is left) and makes {@code nextOwner} (a fresh owner
     * token the engine made for the new term) its owner, so that no command still on its way for {@code owner} — a late
     * renewal, a retried acquisition, a shortening, a release or a token issuance of the earlier term — can change the
     * new term. A key that is free, expired or held by another owner is left as it is: an extension that lands late
     * never revives a lease nor touches a later holder's. Answers {@link RenewalResult#RENEWED} when done (also when the
     * key is already held by {@code nextOwner}: this call ran before, and the repeat changes nothing), otherwise what a
     * renewal would answer. The fencing token stays the hold's own, and a waiter's mark on the key is kept.
     *
     * <p>The same step as {@link LockBackend#shorten}, which a store usually implements with the same script. The
     * engine sends only kinds the store {@linkplain BackendCapabilities#modes() takes}, and never for a lease the store
     * keeps by its session. A failure throws {@code LockBackendException} with the outcome unknown; the engine repeats
     * the call for the same {@code nextOwner}.
     */
    RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis);
}
