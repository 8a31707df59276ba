package dev.dlock.redis;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;

import dev.dlock.core.StaleFencingTokenException;

import redis.clients.jedis.UnifiedJedis;

/**
 * Writes to Redis that a lock holder whose lease was lost cannot make: each write carries the holder's fencing token,
 * and one script writes only when it is not lower than the token stored beside the value ({@link #tokenKey(String)}),
 * keeping the larger. A holder paused past its lease therefore cannot overwrite what the next holder wrote. Only
 * writes through it are fenced. Details and an example: docs/fencing.md#redis-fencedredis.
 */
public final class FencedRedis {

    private static final LuaScript FENCED_WRITE = LuaScript.load("fenced_write.lua");
    private static final String TOKEN_SUFFIX = ":dlock-fence";

    private final UnifiedJedis redis;

    /** Writes through {@code redis} (a single node, a cluster or a sentinel-managed client). */
    public FencedRedis(UnifiedJedis redis) {
        this.redis = Objects.requireNonNull(redis, "redis");
    }

    /**
     * Sets {@code key} to {@code value}, keeping the expiry off, unless a larger token was accepted.
     *
     * @throws StaleFencingTokenException when the key already accepted a larger token (nothing is written)
     */
    public void set(String key, String value, long fencingToken) {
        write(key, fencingToken, "SET", 0, value);
    }

    /**
     * Sets {@code key} to {@code value} expiring after {@code ttl} (the stored token expires with it), unless
     * a larger token was accepted.
     *
     * @throws StaleFencingTokenException when the key already accepted a larger token (nothing is written)
     */
    public void set(String key, String value, long fencingToken, Duration ttl) {
        if (ttl == null || ttl.toMillis() <= 0) {
            throw new IllegalArgumentException("ttl of the fenced SET of '" + key + "' must be at least 1ms, got " + ttl);
        }
        write(key, fencingToken, "SET", ttl.toMillis(), value);
    }

    /**
     * Sets {@code field} of the hash {@code key}, unless a larger token was accepted for the hash.
     *
     * @throws StaleFencingTokenException when the hash already accepted a larger token (nothing is written)
     */
    public void hset(String key, String field, String value, long fencingToken) {
        write(key, fencingToken, "HSET", 0, Objects.requireNonNull(field, "field"), value);
    }

    /**
     * Appends {@code value} to the list {@code key}, unless a larger token was accepted for the list.
     *
     * @throws StaleFencingTokenException when the list already accepted a larger token (nothing is appended)
     */
    public void rpush(String key, String value, long fencingToken) {
        write(key, fencingToken, "RPUSH", 0, value);
    }

    /** The largest token {@code key} accepted, or empty when nothing was written through a guard (or it expired). */
    public OptionalLong acceptedToken(String key) {
        String token = redis.get(tokenKey(key));
        return token == null ? OptionalLong.empty() : OptionalLong.of(Long.parseLong(token));
    }

    /** Deletes {@code key} and its stored token: a reset, after which a write with any token is accepted. */
    public void delete(String key) {
        redis.del(key);
        redis.del(tokenKey(key));
    }

    /**
     * The key holding the token {@code key} accepted: {@code key} plus a suffix when {@code key} has a hash tag
     * (the tag is kept), else <code>{key}</code> plus the suffix, which hashes like {@code key} itself.
     *
     * @throws IllegalArgumentException when {@code key} has a '}' but no hash tag (no such key can share its slot)
     */
    public static String tokenKey(String key) {
        Objects.requireNonNull(key, "key");
        if (hasHashTag(key)) {
            return key + TOKEN_SUFFIX;
        }
        if (key.indexOf('}') >= 0) {
            throw new IllegalArgumentException("Fenced Redis key '" + key + "' has a '}' but no hash tag, so its token "
                    + "cannot share its cluster slot; give it a hash tag such as {order-7}");
        }
        return "{" + key + "}" + TOKEN_SUFFIX;
    }

    private void write(String key, long fencingToken, String command, long expiryMillis, String... arguments) {
        for (String argument : arguments) {
            Objects.requireNonNull(argument, () -> "value of the fenced " + command + " of '" + key + "'");
        }
        List<String> args = new ArrayList<>(3 + arguments.length);
        args.add(Long.toString(fencingToken));
        args.add(command);
        args.add(Long.toString(expiryMillis));
        args.addAll(List.of(arguments));
        List<?> reply = (List<?>) FENCED_WRITE.run(redis, List.of(key, tokenKey(key)), args);
        if (((Number) reply.get(0)).longValue() == 0) {
            throw new StaleFencingTokenException("Redis key '" + key + "'", fencingToken, Long.parseLong(text(reply.get(1))));
        }
    }

    private static String text(Object reply) {
        return reply instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : reply.toString();
    }

    /** Redis' rule: the hash tag is what lies between the first '{' and the next '}', when not empty. */
    private static boolean hasHashTag(String key) {
        int open = key.indexOf('{');
        if (open < 0) {
            return false;
        }
        int close = key.indexOf('}', open + 1);
        return close > open + 1;
    }
}
