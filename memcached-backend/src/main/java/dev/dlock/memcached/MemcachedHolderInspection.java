package dev.dlock.memcached;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Objects;
import java.util.function.Function;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;

/**
 * Who holds a key in memcached, and an operator's forced release — best-effort, as everything in this store: an
 * evicted or restarted item has no holder to show, though its holder may still run. The holder is the lock item's
 * value, its remaining lease the item's TTL ({@code mg} with the {@code t} flag, read without touching it) in
 * memcached's whole seconds, so up to a second long. A forced release deletes the lock item by compare-and-swap and
 * the owner record with it while it names the same owner, so the holder's next renewal finds the key gone and its
 * release is told it did not own the key (never that it released cleanly). memcached pushes no notices: waiters find
 * the key free on their next poll. Only exclusive locks live here: other kinds have no holders.
 */
final class MemcachedHolderInspection implements HolderInspection {

    /** How often a forced release reads again when the item changed between its read and its delete. */
    private static final int ATTEMPTS = 8;

    private final MemcachedKeys keys;
    private final Function<String, MetaClient> clientOf;

    MemcachedHolderInspection(MemcachedKeys keys, Function<String, MetaClient> clientOf) {
        this.keys = keys;
        this.clientOf = clientOf;
    }

    @Override
    public List<StoredHolder> holders(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            return List.of();
        }
        MetaClient client = clientOf.apply(key);
        try {
            return holderOf(client.exchange(List.of(MetaRequest.get(keys.lock(key)))).get(0));
        } catch (IOException e) {
            throw failure("holders", key, client, e);
        }
    }

    @Override
    public List<StoredHolder> forceRelease(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            return List.of();
        }
        MetaClient client = clientOf.apply(key);
        String lockKey = keys.lock(key);
        String ownerKey = keys.owner(key);
        try {
            for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                List<MetaReply> read = client.exchange(List.of(MetaRequest.get(lockKey), MetaRequest.get(ownerKey)));
                MetaReply lock = read.get(0);
                if (!lock.hit()) {
                    return List.of();
                }
                if (client.exchange(List.of(MetaRequest.delete(lockKey, lock.cas()))).get(0).done()) {
                    MetaReply owner = read.get(1);
                    if (owner.hit() && owner.valueIs(lock.value())) {
                        // Best-effort: a record left behind only makes the holder's release read ALREADY_FREE.
                        client.exchange(List.of(MetaRequest.delete(ownerKey, owner.cas())));
                    }
                    return holderOf(lock);
                }
                // Renewed or released since the read: read again.
            }
        } catch (IOException e) {
            throw failure("forceRelease", key, client, e);
        }
        throw new LockBackendException("memcached forceRelease of key '" + key + "' on " + client + " found the key changed on each of "
                + ATTEMPTS + " attempts", null);
    }

    private static List<StoredHolder> holderOf(MetaReply lock) {
        if (!lock.hit() || lock.value() == null) {
            return List.of();
        }
        long ttl = lock.ttlSeconds();
        long remaining = ttl == MetaReply.NO_EXPIRY || ttl == Long.MIN_VALUE ? StoredHolder.NO_EXPIRY : ttl * 1000;
        return List.of(new StoredHolder(new String(lock.value(), StandardCharsets.UTF_8), remaining));
    }

    private static LockBackendException failure(String operation, String key, MetaClient client, IOException e) {
        return LockBackendException.storeFailure("memcached " + operation + " of key '" + key + "' on " + client + " failed", e);
    }
}
