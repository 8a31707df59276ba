package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import java.util.OptionalLong;

import dev.dlock.core.spi.FencingTokens;

/**
 * A fenced write was refused because the resource already accepted a larger fencing token: the
 * writer's lock was lost (a pause, a partition) and a newer holder has written since. Nothing was
 * written; retrying with the same token can never succeed.
 */
public class StaleFencingTokenException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    private static final String CHANGE_OF_STORE = ". Or the lock store was changed: the accepted token is on the"
            + " clock's scale (microseconds since the epoch: Redis, JDBC and in-memory tokens start there) and the offered"
            + " one is a counter's (ZooKeeper's transaction ids); if so, no holder of the old store writes any more, and"
            + " the guard's accepted tokens must be lowered once (docs/fencing.md, \"Changing the lock store\")";

    private final String resource;
    private final long offeredToken;
    private final Long acceptedToken;

    /**
     * Creates the exception for {@code resource}, refusing {@code offeredToken}; {@code acceptedToken}
     * is the token the resource holds, or null when it could not be read.
     */
    public StaleFencingTokenException(String resource, long offeredToken, @Nullable Long acceptedToken) {
        super("Stale fencing token for " + resource + ": offered " + offeredToken
                + (acceptedToken == null ? "" : ", but " + acceptedToken + " was already accepted")
                + "; the lock was lost and a newer holder has written, so this write was refused"
                + (acceptedToken != null && likelyAChangeOfStore(offeredToken, acceptedToken) ? CHANGE_OF_STORE : ""));
        this.resource = resource;
        this.offeredToken = offeredToken;
        this.acceptedToken = acceptedToken;
    }

    /**
     * Whether a refusal of {@code offered} against {@code accepted} looks like a change of lock store rather than a lost
     * lock: the accepted token is on the clock floor's scale and the offered one far below it.
     */
    static boolean likelyAChangeOfStore(long offered, long accepted) {
        return FencingTokens.onClockScale(accepted) && !FencingTokens.onClockScale(offered);
    }

    /** The guarded resource (a table row, a fence row, a Redis key). */
    public String resource() {
        return resource;
    }

    /** The fencing token the refused write carried. */
    public long offeredToken() {
        return offeredToken;
    }

    /** The larger token the resource had already accepted, when it could be read. */
    public OptionalLong acceptedToken() {
        return acceptedToken == null ? OptionalLong.empty() : OptionalLong.of(acceptedToken);
    }
}
