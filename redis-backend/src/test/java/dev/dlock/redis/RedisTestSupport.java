package dev.dlock.redis;

import java.time.Duration;
import java.util.function.BooleanSupplier;
import java.util.function.Supplier;

import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;

/** Shared helpers for the Redis backend tests: short-timeout clients and bounded waits. */
final class RedisTestSupport {

    static final int CLIENT_TIMEOUT_MILLIS = 500;

    private RedisTestSupport() {
    }

    /** A pooled standalone client with a short timeout, so a dead server fails fast. */
    static RedisClient client(RedisServerProcess server) {
        return RedisClient.builder()
                .hostAndPort(server.host(), server.port())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(CLIENT_TIMEOUT_MILLIS).build())
                .build();
    }

    /** Polls {@code condition} until it holds or {@code timeout} passes; fails with {@code what} otherwise. */
    static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("Timed out after " + timeout.toMillis() + " ms waiting for: " + what);
            }
            sleep(10);
        }
    }

    /** Retries {@code call} while it throws, for the first calls after a restart hit stale pooled connections. */
    static <T> T retrying(Duration timeout, Supplier<T> call) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (true) {
            try {
                return call.get();
            } catch (RuntimeException e) {
                if (System.nanoTime() > deadline) {
                    throw e;
                }
                sleep(20);
            }
        }
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
