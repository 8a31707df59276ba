package dev.dlock.weaving;

import dev.dlock.core.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/** One real redis-server for the test run (testkit's {@link RedisServerProcess}) and the real Redis backend over it. */
public final class TestRedis {

    private static TestRedis shared;

    private final RedisServerProcess server;

    private TestRedis(RedisServerProcess server) {
        this.server = server;
    }

    /** The server shared by every test of the run, started on first use and stopped at JVM exit. */
    public static synchronized TestRedis shared() {
        if (shared == null) {
            shared = new TestRedis(RedisServerProcess.start());
            Runtime.getRuntime().addShutdownHook(new Thread(shared.server::close));
        }
        return shared;
    }

    /** A new client of the server. */
    public UnifiedJedis client() {
        return RedisClient.builder().hostAndPort(new HostAndPort(server.host(), server.port())).build();
    }

    /** A new {@link RedisLockBackend} over {@code client}. */
    public static LockBackend backend(UnifiedJedis client) {
        return RedisLockBackend.builder(client).build();
    }
}
