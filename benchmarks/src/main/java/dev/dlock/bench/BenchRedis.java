package dev.dlock.bench;

import redis.clients.jedis.ConnectionPoolConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.net.URI;

import redis.clients.jedis.Jedis;

/** Connects benchmark clients to the Redis the harness started (system property {@value #PROPERTY}). */
public final class BenchRedis {

    static final String PROPERTY = "dlock.bench.redis";

    private BenchRedis() {
    }

    /** A pooled client with enough connections for every benchmark thread, so the pool is never the bottleneck. */
    static UnifiedJedis client() {
        return client(5000);
    }

    /** As {@link #client()}, with the given connect and read timeout ({@code 0}: none, so reads block in the kernel). */
    static UnifiedJedis client(int timeoutMillis) {
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
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(timeoutMillis).build())
                .build();
    }

    /** The Redis server's CPU so far (user + system, from INFO cpu), in µs. */
    public static double serverCpuMicros(Jedis admin) {
        double total = 0;
        for (String line : admin.info("cpu").split("\\r?\\n")) {
            if (line.startsWith("used_cpu_user:") || line.startsWith("used_cpu_sys:")) {
                total += Double.parseDouble(line.substring(line.indexOf(':') + 1).trim());
            }
        }
        return total * 1e6;
    }
}
