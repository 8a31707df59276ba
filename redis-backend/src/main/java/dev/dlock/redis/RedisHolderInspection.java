package dev.dlock.redis;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisException;

/**
 * Who holds a key in Redis, and an operator's forced release: one script each, on the kind's lease key (the owner key
 * of exclusive, fair and write, with a waiter's mark stripped; the set of expiring members of read and permits, expired
 * members left out; a holder whose fencing token was never issued is a holder like any other: holders are read from
 * the lease key, never from the fencing counter). Both scripts touch only the key's own hash tag (one cluster slot).
 * A forced release deletes the lease key and publishes the release notice; a fair key's queue stays, and the fencing
 * counter is kept. An exclusive, fair or write holder's own release then finds no record of a release of its own,
 * so it reports its lease lost, and its fencing token, if it asks for one now, is refused (see force_release.lua). A
 * read or permit holder learns of it at its next renewal; its release before that reads as already released.
 */
final class RedisHolderInspection implements HolderInspection {

    private static final String FENCING = "fencing.lua";
    private static final String NOTICES = "notices.lua";
    private static final String HOLDERS = "holders.lua";
    private static final LuaScript READ_HOLDERS = LuaScript.load("read_holders.lua", FENCING, NOTICES, HOLDERS);
    private static final LuaScript FORCE_RELEASE = LuaScript.load("force_release.lua", FENCING, NOTICES, HOLDERS);

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final String releasePublish;

    RedisHolderInspection(UnifiedJedis client, RedisKeys keys, String releasePublish) {
        this.client = client;
        this.keys = keys;
        this.releasePublish = releasePublish;
    }

    @Override
    public List<StoredHolder> holders(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        try {
            return decode(READ_HOLDERS.run(client, List.of(keys.leaseKey(kind, key)), List.of(shape(kind))));
        } catch (JedisException e) {
            throw LockBackendException.storeFailure("Redis holders of key '" + key + "' failed", e);
        }
    }

    @Override
    public List<StoredHolder> forceRelease(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        try {
            return decode(FORCE_RELEASE.run(client, List.of(keys.leaseKey(kind, key), keys.releaseChannel(key)),
                    List.of(shape(kind), releasePublish)));
        } catch (JedisException e) {
            throw LockBackendException.storeFailure("Redis forceRelease of key '" + key + "' failed", e);
        }
    }

    /** How the kind's holders are kept: one owner key, or a set of expiring members. */
    private static String shape(LockKind kind) {
        return kind.shared() ? "set" : "owner";
    }

    private static List<StoredHolder> decode(Object reply) {
        List<?> flat = (List<?>) reply;
        List<StoredHolder> holders = new ArrayList<>(flat.size() / 2);
        for (int i = 0; i + 1 < flat.size(); i += 2) {
            holders.add(new StoredHolder(text(flat.get(i)), Math.max(0, ((Number) flat.get(i + 1)).longValue())));
        }
        return List.copyOf(holders);
    }

    private static String text(Object value) {
        return value instanceof byte[] bytes ? new String(bytes, StandardCharsets.UTF_8) : String.valueOf(value);
    }
}
