package dev.dlock.core.spi;

/** What the store answered to a {@link LocalHandOff#handOff hand-off}: the key passed on with a new token, or not held. */
public sealed interface HandOffResult {

    /** The owner no longer holds the key; the store changed nothing. */
    HandOffResult NOT_HELD = new NotHeld();

    /**
     * The key stays taken for the next local holder, with {@code fencingToken} above every token issued before for
     * the key, or {@link AcquireResult.Acquired#TOKEN_ON_REQUEST} when the store issues the next holder's token only
     * when it asks ({@link TokensOnRequest}). {@code othersWaiting}: another owner asked for the key
     * while it was held (a store that cannot tell says true), so the engine bounds how often the key passes on before
     * it is freed for them.
     */
    record Passed(long fencingToken, boolean othersWaiting) implements HandOffResult {
    }

    /** See {@link #NOT_HELD}. */
    record NotHeld() implements HandOffResult {
    }
}
