package dev.dlock.core.spi;

/** What the store answered to one acquire attempt. */
public sealed interface AcquireResult {

    /**
     * The key was free (or already the caller's) and is now held by the caller. {@code fencingToken}
     * is strictly greater than every token issued before for the key — for a replicated store, on any
     * node that could have been its master; each store's docs state the assumption this rests on.
     *
     * <p>A store that can starts its tokens at its clock in microseconds ({@link FencingTokens}), so a guard's accepted
     * tokens stay below the next store's when the lock store changes.
     *
     * <p>Or {@link #TOKEN_ON_REQUEST}: the store took the key without issuing a token, and issues one only when
     * the holder first asks ({@link TokensOnRequest}). Such a token obeys the same rule.
     */
    record Acquired(long fencingToken) implements AcquireResult {

        /**
         * The {@link #fencingToken()} of an acquisition whose token is not issued yet: the engine asks
         * {@link TokensOnRequest#issueFencingToken} the first time the holder reads it. Real tokens are positive.
         */
        public static final long TOKEN_ON_REQUEST = 0;

        /** An acquisition whose fencing token is issued when the holder first asks for it. */
        public static Acquired tokenOnRequest() {
            return new Acquired(TOKEN_ON_REQUEST);
        }

        /** Whether the store issued the token with the acquisition (false: {@link #TOKEN_ON_REQUEST}). */
        public boolean tokenIssued() {
            return fencingToken != TOKEN_ON_REQUEST;
        }
    }

    /**
     * Someone else holds the key; it expires in {@code remainingTtlMillis} unless renewed
     * (negative when the store cannot tell). For a fair acquisition, {@code waitersAhead} is how many
     * queued waiters come before the caller (-1 when the store does not say): a waiter need not ask again
     * before that many more releases, or the TTL.
     */
    record Held(long remainingTtlMillis, int waitersAhead) implements AcquireResult {

        /** A refusal that says nothing about a queue. */
        public Held(long remainingTtlMillis) {
            this(remainingTtlMillis, -1);
        }
    }
}
