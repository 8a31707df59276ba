package dev.dlock.bench;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;

/** Connects benchmark clients to the Redis the harness started (system property {@value #PROPERTY}). */
final class BenchRedis {

    static final String PROPERTY = "dlock.bench.redis";

    private BenchRedis() {
    }

    /** A pooled client with enough connections for every benchmark thread, so the pool is never the bottleneck. */
    static UnifiedJedis client() {
        String uri = System.getProperty(PROPERTY);
        if (uri == null) {
            throw new IllegalStateException("set -D" + PROPERTY + "=redis://host:port (BenchmarkMain does)");
        }
        URI parsed = URI.create(uri);
        ConnectionPoolConfig pool = new ConnectionPoolConfig();
        pool.setMaxTotal(128);
        pool.setMaxIdle(128);
        return RedisClient.builder()
                .hostAndPort(new HostAndPort(parsed.getHost(), parsed.getPort()))
                .poolConfig(pool)
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(5000).build())
                .build();
    }
}
