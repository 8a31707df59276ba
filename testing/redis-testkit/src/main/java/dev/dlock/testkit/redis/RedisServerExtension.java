package dev.dlock.testkit.redis;

import dev.dlock.testkit.ServerExtension;

/**
 * Starts one {@link RedisServerProcess} before the tests of a class and closes it after them (its directory deleted).
 *
 * <p>Use as {@code @RegisterExtension static final RedisServerExtension redis = new RedisServerExtension();}.
 */
public final class RedisServerExtension extends ServerExtension<RedisServerProcess> {

    /** A standalone server: {@code redis-server} from the PATH, else the embedded one. */
    public RedisServerExtension() {
        super("Redis server", RedisServerProcess::start);
    }
}
