package dev.dlock.testkit.redis;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * One real redis-server shared by every test class of a test JVM that does not need a server of
 * its own (it never kills or wipes it); started on first use, stopped when the JVM exits.
 */
public final class SharedRedis {

    private static RedisServerProcess server;

    private SharedRedis() {
    }

    /** The shared server, started on first use. */
    public static synchronized RedisServerProcess server() {
        if (server == null) {
            server = RedisServerProcess.start();
        }
        return server;
    }

    /** A new pooled client of the shared server; the caller closes it. */
    public static UnifiedJedis client() {
        RedisServerProcess redis = server();
        return RedisClient.builder().hostAndPort(new HostAndPort(redis.host(), redis.port())).build();
    }
}
