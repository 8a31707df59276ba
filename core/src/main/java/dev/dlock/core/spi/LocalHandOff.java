package dev.dlock.core.spi;

/**
 * Optional ability ({@link BackendCapabilities#localHandOff()}): an exclusive lease passed straight to the next holder
 * in the JVM, in one store call instead of a release and an acquisition.
 */
@FunctionalInterface
public interface LocalHandOff {

    /**
     * Passes {@code owner}'s exclusive lease on {@code key} to the next holder in this JVM in one call: the key stays
     * taken, now by {@code nextOwner} (a fresh owner token the engine made for the next holder), so that every
     * owner-checked command still on its way for {@code owner} (a late renewal, release or token issuance) misses. A
     * fresh fencing token is issued as for an acquisition, or, by a store that issues on request, left for the next
     * holder to ask for unless {@code issueToken} (the next holder will read it): then it is issued in the same call, for
     * {@code nextOwner} and only when {@code owner} still holds the key. When {@code leaseMillis} is positive the lease
     * is set to it; 0 keeps the store's expiry as it is. Answers with the token and whether another owner asked for the
     * key meanwhile, or {@link HandOffResult#NOT_HELD} (nothing issued) when {@code owner} no longer holds it.
     *
     * <p>Must be idempotent: a key already held by {@code nextOwner} (this hand-off ran before and its reply was lost)
     * answers {@link HandOffResult.Passed} again, perhaps without a token (the next holder then asks for it). A failure
     * throws {@code LockBackendException} with the outcome unknown.
     */
    HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis, boolean issueToken);

    /** {@link #handOff(String, String, String, long, boolean)} leaving a token issued on request to be asked for. */
    default HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis) {
        return handOff(key, owner, nextOwner, leaseMillis, false);
    }
}
