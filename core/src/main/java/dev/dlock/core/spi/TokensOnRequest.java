package dev.dlock.core.spi;

import dev.dlock.core.LockKind;
import java.util.OptionalLong;

/**
 * Optional ability ({@link BackendCapabilities#tokensOnRequest()}), required of a store whose acquisitions (or
 * hand-offs) answer {@link AcquireResult.Acquired#TOKEN_ON_REQUEST}: the fencing token is issued the first time the
 * holder asks for it, which saves the acquisition that work when nobody reads the token.
 */
@FunctionalInterface
public interface TokensOnRequest {

    /**
     * Issues {@code key}'s next fencing token by the same rule as an acquisition (larger than every token ever issued
     * for the key), atomically in the store and only while {@code owner} holds {@code key} as a lock of {@code kind};
     * empty, with nothing issued, when it no longer does.
     *
     * <p>Why a token issued late is as good as one issued with the acquisition: holding periods of one key never
     * overlap, and the issuance refuses an owner that does not hold the key, so the token is larger than every token
     * of every earlier holder, and a holder whose lease was lost gets no token at all. The engine asks once per hold,
     * the first time the holder reads its token, and never after the hold ended (an issuance that lands late misses:
     * a local hand-off gives the key the next holder's own owner); it asks again only after a failure
     * (a second token issued while still holding is larger, and as correct). A failure throws
     * {@code LockBackendException} with the outcome unknown.
     */
    OptionalLong issueFencingToken(LockKind kind, String key, String owner);
}
