package dev.dlock.redis;

import java.nio.charset.StandardCharsets;

import dev.dlock.core.LockKeyException;
import dev.dlock.core.LockKind;

import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * Maps logical lock keys to Redis keys: {@code prefix{escaped}} for the lock, plus the fencing
 * counter, release channel, the record of the last release and the keys of the other lock kinds, which share its
 * hash tag, so all of one logical key live in one cluster slot.
 */
final class RedisKeys {

    private static final String COUNTER_SUFFIX = ":fence";
    private static final String CHANNEL_SUFFIX = ":released";
    private static final String RELEASE_RECORD_SUFFIX = ":released-by";
    private static final String CONTROL_CHANNEL = "__dlock:control";

    private final String prefix;

    RedisKeys(String prefix) {
        this.prefix = prefix;
    }

    /** The Redis key holding the owner token of {@code key}. */
    String lockKey(String key) {
        return prefix + "{" + escape(key) + "}";
    }

    /** The fencing counter of {@code key}; same slot as the lock key. */
    String counterKey(String key) {
        return lockKey(key) + COUNTER_SUFFIX;
    }

    /** The pub/sub channel announcing releases of {@code key}; same slot as the lock key. */
    String releaseChannel(String key) {
        return lockKey(key) + CHANNEL_SUFFIX;
    }

    /** The arrival order of {@code key}'s fair waiters (owner to sequence number); same slot as the lock key. */
    String fairQueueKey(String key) {
        return lockKey(key) + ":queue";
    }

    /** When each fair waiter of {@code key} last asked (owner to server ms); same slot as the lock key. */
    String fairSeenKey(String key) {
        return lockKey(key) + ":seen";
    }

    /** The writer owner of {@code key}'s read/write lock; same slot as the lock key. */
    String writerKey(String key) {
        return lockKey(key) + ":rw";
    }

    /** The readers of {@code key}'s read/write lock (owner to expiry in server ms); same slot as the lock key. */
    String readersKey(String key) {
        return lockKey(key) + ":readers";
    }

    /** The owner of a writer waiting for {@code key}'s readers to leave, which stops new readers; same slot as the lock key. */
    String writerWaitingKey(String key) {
        return lockKey(key) + ":writer-waiting";
    }

    /** The holders of {@code key}'s permits (owner to expiry in server ms); same slot as the lock key. */
    String permitsKey(String key) {
        return lockKey(key) + ":permits";
    }

    /** The number of permits {@code key}'s holders took it with; same slot as the lock key. */
    String permitsCountKey(String key) {
        return lockKey(key) + ":permits:n";
    }

    /** The Redis key that records a lease of {@code kind} on {@code key}: its owner key, or the set it is a member of. */
    String leaseKey(LockKind kind, String key) {
        return switch (kind.mode()) {
            case EXCLUSIVE, FAIR -> lockKey(key);
            case WRITE -> writerKey(key);
            case READ -> readersKey(key);
            case PERMITS -> permitsKey(key);
        };
    }

    /**
     * The record of the releases of {@code key}'s lock of {@code kind}, kept briefly so that a repeated release is told
     * from a lost lease: for an owner-key kind (exclusive, fair, write) the owner whose release freed it last, for a
     * shared kind (read, permits) a sorted set of the owners released lately; same slot as the lock key.
     */
    String lastReleaseKey(LockKind kind, String key) {
        return leaseKey(kind, key) + RELEASE_RECORD_SUFFIX;
    }

    /** The channel the subscriber always listens on, so its connection exists before any waiter does. */
    String controlChannel() {
        return prefix + CONTROL_CHANNEL;
    }

    /** The cluster slot of {@code key}'s lock key and companions. */
    int slot(String key) {
        return JedisClusterCRC16.getSlot(lockKey(key));
    }

    /**
     * Percent-encodes {@code %}, <code>{</code> and <code>}</code>: injective because {@code %} itself is
     * encoded, and braces can no longer end or restart the hash tag early. Never empty for a valid key.
     */
    static String escape(String key) {
        if (key == null || key.isEmpty()) {
            throw new LockKeyException("Lock key must not be null or empty, got " + (key == null ? "null" : "''"));
        }
        // Most keys have nothing to encode: three intrinsic scans, no loop over the characters.
        if (key.indexOf('%') < 0 && key.indexOf('{') < 0 && key.indexOf('}') < 0) {
            return key;
        }
        StringBuilder escaped = null;
        for (int i = 0; i < key.length(); i++) {
            char c = key.charAt(i);
            String replacement = switch (c) {
                case '%' -> "%25";
                case '{' -> "%7B";
                case '}' -> "%7D";
                default -> null;
            };
            if (replacement != null && escaped == null) {
                escaped = new StringBuilder(key.length() + 8).append(key, 0, i);
            }
            if (escaped != null) {
                if (replacement != null) {
                    escaped.append(replacement);
                } else {
                    escaped.append(c);
                }
            }
        }
        return escaped == null ? key : escaped.toString();
    }

    /** Rejects prefixes that would break the hash tag or that cannot be encoded. */
    static String validatePrefix(String prefix) {
        if (prefix == null) {
            throw new IllegalArgumentException("keyPrefix must not be null");
        }
        if (prefix.indexOf('{') >= 0 || prefix.indexOf('}') >= 0) {
            throw new IllegalArgumentException("keyPrefix must not contain '{' or '}' (it would break the hash tag), got '"
                    + prefix + "'");
        }
        if (prefix.getBytes(StandardCharsets.UTF_8).length > 256) {
            throw new IllegalArgumentException("keyPrefix must be at most 256 bytes, got " + prefix.length() + " chars");
        }
        return prefix;
    }
}
