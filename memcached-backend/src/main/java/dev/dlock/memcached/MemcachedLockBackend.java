package dev.dlock.memcached;

import java.io.IOException;
import java.net.InetSocketAddress;
import java.net.SocketTimeoutException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Objects;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;

/**
 * The lock store in memcached (1.6 or later, meta protocol) — <b>efficiency only, never for correctness</b>: memcached
 * may evict a held lock when it needs memory, and forgets every lock when it restarts, without telling anyone. Use it
 * where a rare double execution costs only work (a cache refresh, a report run twice), never to protect data. No
 * fencing tokens (its {@link #capabilities()} say so); every write compares the item's cas; an owner record tells
 * {@link ReleaseResult#ALREADY_FREE} from {@link ReleaseResult#NOT_OWNER}; leases are at most {@link #MAX_LEASE}.
 * Details (items, whole-second TTLs, servers, waiting): docs/stores.md#memcached-efficiency-only.
 */
public final class MemcachedLockBackend implements LockBackend, RenewalGrouping, LeaseExtension {

    private static final Logger log = LoggerFactory.getLogger(MemcachedLockBackend.class);

    /** memcached's port when a server names none. */
    public static final int DEFAULT_PORT = 11211;
    /** The timeout of every exchange with a server, and of connecting, when none is configured. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(2);
    /** The most connections to one server when nothing else is configured. */
    public static final int DEFAULT_POOL_SIZE = 8;
    /** What every memcached key of the store starts with when nothing else is configured. */
    public static final String DEFAULT_KEY_PREFIX = "dlock:";
    /** The most leases one renew call carries: one batch of reads and one of writes. */
    public static final int RENEWAL_BATCH_SIZE = 100;
    /** The longest lease: memcached takes a TTL above 30 days for a Unix time. */
    public static final Duration MAX_LEASE = Duration.ofDays(29);
    /**
     * How much longer than the lock the owner record lives: long enough for a release retried after a lost reply
     * to find it once the lock is gone.
     */
    static final long OWNER_RECORD_EXTRA_SECONDS = 60;

    /** How often an operation reads again when the item changed between its read and its write. */
    private static final int ATTEMPTS = 8;
    /** What {@link AcquireResult.Acquired#fencingToken()} carries: nothing, the store issues no tokens. */
    private static final long NO_TOKEN = 0;

    private final List<Server> servers;
    private final MemcachedKeys keys;

    /** One memcached server: its name for renewal grouping, and its connections. */
    private record Server(StoreNode node, MetaClient client) {
        @Override
        public String toString() {
            return node.name();
        }
    }

    private MemcachedLockBackend(Builder builder) {
        this.keys = new MemcachedKeys(builder.keyPrefix);
        int timeoutMillis = (int) builder.timeout.toMillis();
        List<Server> list = new ArrayList<>();
        for (InetSocketAddress address : builder.servers) {
            MetaClient client = new MetaClient(address, builder.poolSize, timeoutMillis);
            list.add(new Server(new StoreNode(client.toString()), client));
        }
        this.servers = List.copyOf(list);
    }

    /** Starts configuring a backend on {@code servers}: {@code host[:port]}, several separated by commas. */
    public static Builder builder(String servers) {
        return builder(servers == null ? List.of() : Arrays.asList(servers.split(",")));
    }

    /** Starts configuring a backend on {@code servers}, each {@code host[:port]} (port 11211 when left out). */
    public static Builder builder(List<String> servers) {
        return new Builder(servers);
    }

    /**
     * Takes {@code key} with {@code add} (which only a missing or run-out item lets through) in the same round trip
     * as a read of the holder, then records the owner; a key already held by {@code owner} (a repeated call) has
     * its lease set again by compare-and-swap. Otherwise reports the holder's remaining TTL.
     */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        byte[] value = ownerBytes(owner);
        long ttl = ttlSeconds(leaseMillis);
        Server server = serverOf(key);
        String lockKey = keys.lock(key);
        try {
            for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                List<MetaReply> replies = server.client.exchange(List.of(MetaRequest.add(lockKey, value, ttl),
                        MetaRequest.get(lockKey)));
                if (!replies.get(0).done()) {
                    MetaReply holder = replies.get(1);
                    if (!holder.hit()) {
                        continue; // it ran out between the two commands
                    }
                    if (!holder.valueIs(value)) {
                        return held(holder);
                    }
                    MetaReply extended = server.client.exchange(List.of(MetaRequest.replace(lockKey, value, ttl, holder.cas()))).get(0);
                    if (!extended.done()) {
                        continue;
                    }
                }
                recordOwner(server, key, value, ttl);
                return new AcquireResult.Acquired(NO_TOKEN);
            }
        } catch (IOException e) {
            if (!(e instanceof SocketTimeoutException)) {
                // The add may have been applied before its reply was lost: do not leave the key taken until its TTL.
                releaseQuietly(key, owner);
            }
            throw failure("tryAcquire", key, server, e);
        }
        log.debug("memcached key '{}' on {} changed on each of {} attempts; answering held", key, server, ATTEMPTS);
        return new AcquireResult.Held(-1);
    }

    private void recordOwner(Server server, String key, byte[] value, long ttl) throws IOException {
        MetaReply recorded = server.client.exchange(List.of(MetaRequest.set(keys.owner(key), value, ownerTtl(ttl)))).get(0);
        if (!recorded.done()) {
            throw new IOException("memcached did not store the owner record of key '" + key + "': " + recorded);
        }
    }

    private static AcquireResult held(MetaReply holder) {
        long ttl = holder.ttlSeconds();
        // memcached's remaining seconds round up: the item lives at most that long.
        return new AcquireResult.Held(ttl < 0 ? -1 : ttl * 1000);
    }

    /**
     * Deletes {@code key}'s lock if, and only if, {@code owner} holds it (compare-and-swap on the cas just read).
     * When the lock is gone, the owner record answers: still {@code owner} means nobody acquired the key since
     * ({@link ReleaseResult#ALREADY_FREE}); another owner, or no record, {@link ReleaseResult#NOT_OWNER}.
     * {@code fencingToken} is not needed: an owner token names one acquisition.
     */
    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        BackendCapabilities.requireExclusive(this, kind);
        byte[] value = ownerBytes(owner);
        Server server = serverOf(key);
        String lockKey = keys.lock(key);
        try {
            for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                List<MetaReply> replies = server.client.exchange(List.of(MetaRequest.get(lockKey), MetaRequest.get(keys.owner(key))));
                MetaReply lock = replies.get(0);
                if (!lock.hit()) {
                    return replies.get(1).valueIs(value) ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
                }
                if (!lock.valueIs(value)) {
                    return ReleaseResult.NOT_OWNER;
                }
                if (server.client.exchange(List.of(MetaRequest.delete(lockKey, lock.cas()))).get(0).done()) {
                    return ReleaseResult.RELEASED;
                }
                // Changed since the read (a renewal of ours landed) or gone meanwhile: read again.
            }
        } catch (IOException e) {
            throw failure("release", key, server, e);
        }
        throw new LockBackendException("memcached release of key '" + key + "' on " + server + " found the key changed on each of "
                + ATTEMPTS + " attempts", null);
    }

    private void releaseQuietly(String key, String owner) {
        try {
            release(LockKind.EXCLUSIVE, key, owner, NO_TOKEN);
        } catch (RuntimeException e) {
            log.debug("Best-effort release of memcached key '{}' after a failed acquire also failed: {}", key, e.toString());
        }
    }

    /**
     * Reads every lock of the batch in one round trip, then rewrites the owner's ones with their new TTL by
     * compare-and-swap (and extends their owner records) in a second; a lock that changed in between is read
     * again. Gone: {@link RenewalResult#EXPIRED}; another owner's: {@link RenewalResult#TAKEN}.
     */
    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        Objects.requireNonNull(batch, "batch");
        if (batch.isEmpty()) {
            return List.of();
        }
        if (batch.size() > RENEWAL_BATCH_SIZE) {
            throw new IllegalArgumentException("a renew batch holds at most " + RENEWAL_BATCH_SIZE + " leases, got " + batch.size());
        }
        Server server = serverOf(batch.get(0).key());
        RenewalResult[] results = new RenewalResult[batch.size()];
        List<Integer> open = new ArrayList<>();
        for (int i = 0; i < batch.size(); i++) {
            open.add(i);
        }
        try {
            for (int attempt = 1; attempt <= ATTEMPTS && !open.isEmpty(); attempt++) {
                open = renewOnce(server, batch, open, results);
            }
        } catch (IOException e) {
            throw LockBackendException.storeFailure("memcached renewal of " + batch.size() + " leases (the first of key '"
                    + batch.get(0).key() + "') on " + server + " failed", e);
        }
        if (!open.isEmpty()) {
            throw new LockBackendException("memcached renewal of " + open.size() + " keys on " + server
                    + " found them changed on each of " + ATTEMPTS + " attempts", null);
        }
        return Arrays.asList(results);
    }

    /**
     * Gives {@code owner}'s lock to {@code retiredOwner} with {@code keepMillis} left (rounded up to whole seconds, as
     * every memcached TTL), by compare-and-swap on the value read; a lock the retired owner holds is this call repeated.
     */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        return newTerm("shortening", kind, key, owner, retiredOwner, keepMillis);
    }

    /**
     * Gives {@code owner}'s lock to {@code nextOwner} for {@code leaseMillis} (rounded up to whole seconds) by the
     * compare-and-swap a shortening makes, so no late command of {@code owner} matches it.
     */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        return newTerm("extension", kind, key, owner, nextOwner, leaseMillis);
    }

    /**
     * Replaces {@code owner}'s value with {@code retiredOwner}'s and a TTL of {@code keepMillis}, by compare-and-swap,
     * and records the new owner (whose release then tells a repeat from a loss, as after an acquisition).
     */
    private RenewalResult newTerm(String operation, LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        byte[] value = ownerBytes(owner);
        byte[] retired = ownerBytes(retiredOwner);
        Server server = serverOf(key);
        String lockKey = keys.lock(key);
        try {
            for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
                MetaReply lock = server.client.exchange(List.of(MetaRequest.get(lockKey))).get(0);
                if (!lock.hit()) {
                    return RenewalResult.EXPIRED;
                }
                if (lock.valueIs(retired)) {
                    // Done before (its reply lost): the owner record may not have been written yet.
                    recordOwner(server, key, retired, ttlSeconds(keepMillis));
                    return RenewalResult.RENEWED;
                }
                if (!lock.valueIs(value)) {
                    return RenewalResult.TAKEN;
                }
                MetaReply written = server.client.exchange(List.of(MetaRequest.replace(lockKey, retired,
                        ttlSeconds(keepMillis), lock.cas()))).get(0);
                if (written.done()) {
                    // The new term's owner releases it: its repeated release is told from a loss by this record.
                    recordOwner(server, key, retired, ttlSeconds(keepMillis));
                    return RenewalResult.RENEWED;
                }
            }
        } catch (IOException e) {
            throw LockBackendException.storeFailure("memcached " + operation + " of key '" + key + "' on " + server + " failed", e);
        }
        throw new LockBackendException("memcached " + operation + " of key '" + key + "' found it changed on each of "
                + ATTEMPTS + " attempts", null);
    }

    /** One read and one write round trip for the {@code open} entries; returns those that changed in between. */
    private List<Integer> renewOnce(Server server, List<LeaseRenewal> batch, List<Integer> open, RenewalResult[] results)
            throws IOException {
        List<MetaRequest> reads = new ArrayList<>(open.size());
        for (int i : open) {
            reads.add(MetaRequest.get(keys.lock(batch.get(i).key())));
        }
        List<MetaReply> holders = server.client.exchange(reads);
        List<Integer> ours = new ArrayList<>();
        List<MetaRequest> writes = new ArrayList<>();
        for (int j = 0; j < open.size(); j++) {
            int i = open.get(j);
            LeaseRenewal renewal = batch.get(i);
            byte[] value = ownerBytes(renewal.owner());
            MetaReply holder = holders.get(j);
            if (!holder.hit()) {
                results[i] = RenewalResult.EXPIRED;
            } else if (!holder.valueIs(value)) {
                results[i] = RenewalResult.TAKEN;
            } else {
                long ttl = ttlSeconds(renewal.leaseMillis());
                ours.add(i);
                writes.add(MetaRequest.replace(keys.lock(renewal.key()), value, ttl, holder.cas()));
                writes.add(MetaRequest.touch(keys.owner(renewal.key()), ownerTtl(ttl)));
            }
        }
        List<Integer> changed = new ArrayList<>();
        if (!writes.isEmpty()) {
            List<MetaReply> written = server.client.exchange(writes);
            for (int j = 0; j < ours.size(); j++) {
                if (written.get(2 * j).done()) {
                    results[ours.get(j)] = RenewalResult.RENEWED;
                } else {
                    changed.add(ours.get(j));
                }
            }
        }
        return changed;
    }

    /** The server that holds {@code key}'s lock, named {@code host:port}. */
    @Override
    public StoreNode nodeOf(String key) {
        return serverOf(key).node;
    }

    /** {@value #RENEWAL_BATCH_SIZE}. */
    @Override
    public int maxBatchSize() {
        return RENEWAL_BATCH_SIZE;
    }

    /**
     * Exclusive locks without fencing tokens: memcached keeps no counter that survives an eviction or a restart, so no
     * token could be made safe. Renewals per server, {@value #RENEWAL_BATCH_SIZE} at a time; who holds a key (the lock
     * item's value and TTL) and an operator's forced release (deletes it), best-effort, as the store is; extensions of a
     * fixed lease by compare-and-swap.
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withFencing(false).withRenewalGrouping(this)
                .withHolderInspection(new MemcachedHolderInspection(keys, key -> serverOf(key).client)).withLeaseExtension(this);
    }

    /** One {@code mn} round trip to every server; returns the slowest, in nanoseconds. */
    @Override
    public long ping() {
        long slowest = 0;
        for (Server server : servers) {
            long start = System.nanoTime();
            try {
                server.client.exchange(List.of(MetaRequest.noop()));
            } catch (IOException e) {
                throw LockBackendException.storeFailure("memcached ping of " + server + " failed", e);
            }
            slowest = Math.max(slowest, System.nanoTime() - start);
        }
        return slowest;
    }

    /** The servers, as {@code host:port}, in the order they were given. */
    public List<String> servers() {
        return servers.stream().map(Server::toString).toList();
    }

    /** Closes every connection to the servers. */
    @Override
    public void close() {
        servers.forEach(server -> server.client.close());
    }

    @Override
    public String toString() {
        return "MemcachedLockBackend" + servers();
    }

    /** Rendezvous hashing: the server with the highest score for the key, so the choice never depends on list order. */
    private Server serverOf(String key) {
        if (servers.size() == 1) {
            return servers.get(0);
        }
        Server best = null;
        long bestScore = 0;
        for (Server server : servers) {
            long score = mix(hash(server.node.name()) * 31 + hash(key));
            if (best == null || Long.compareUnsigned(score, bestScore) > 0) {
                best = server;
                bestScore = score;
            }
        }
        return best;
    }

    /** FNV-1a over the string's chars: stable across JVMs and releases, unlike a seeded hash. */
    private static long hash(String text) {
        long hash = 0xcbf29ce484222325L;
        for (int i = 0; i < text.length(); i++) {
            hash ^= text.charAt(i);
            hash *= 0x100000001b3L;
        }
        return hash;
    }

    /** SplitMix64's finalizer, so that nearby inputs score far apart. */
    private static long mix(long z) {
        z = (z ^ (z >>> 30)) * 0xbf58476d1ce4e5b9L;
        z = (z ^ (z >>> 27)) * 0x94d049bb133111ebL;
        return z ^ (z >>> 31);
    }

    /**
     * The TTL that keeps an item at least {@code leaseMillis}: memcached's clock ticks once a second, so an item of
     * {@code n} seconds may go after {@code n - 1}, or after {@code n - 2} when read before a tick up to a second late.
     */
    static long ttlSeconds(long leaseMillis) {
        if (leaseMillis <= 0 || leaseMillis > MAX_LEASE.toMillis()) {
            throw new IllegalArgumentException("a memcached lease must be positive and at most " + MAX_LEASE.toDays()
                    + " days (memcached reads a longer TTL as a date), got " + leaseMillis + " ms");
        }
        return Math.floorDiv(leaseMillis + 999, 1000) + 2;
    }

    private static long ownerTtl(long lockTtl) {
        return lockTtl + OWNER_RECORD_EXTRA_SECONDS;
    }

    private static byte[] ownerBytes(String owner) {
        if (owner == null || owner.isEmpty()) {
            throw new IllegalArgumentException("owner must not be null or empty");
        }
        return owner.getBytes(StandardCharsets.UTF_8);
    }

    private static LockBackendException failure(String operation, String key, Server server, IOException e) {
        return LockBackendException.storeFailure("memcached " + operation + " of key '" + key + "' on " + server + " failed", e);
    }

    /** Configures a {@link MemcachedLockBackend}; every setting is checked when set. */
    public static final class Builder {

        private final List<InetSocketAddress> servers;
        private Duration timeout = DEFAULT_TIMEOUT;
        private int poolSize = DEFAULT_POOL_SIZE;
        private String keyPrefix = DEFAULT_KEY_PREFIX;

        private Builder(List<String> servers) {
            this.servers = parseServers(servers);
        }

        /** The timeout of connecting and of every exchange with a server (default 2 s; 100 ms to 60 s). */
        public Builder timeout(Duration timeout) {
            if (timeout == null || timeout.toMillis() < 100 || timeout.toMillis() > 60_000) {
                throw new IllegalArgumentException("timeout must be between 100 ms and 60 s, got " + timeout);
            }
            this.timeout = timeout;
            return this;
        }

        /** The most connections to each server (default 8, at most 256); a call waits up to the timeout for one. */
        public Builder poolSize(int poolSize) {
            if (poolSize < 1 || poolSize > 256) {
                throw new IllegalArgumentException("poolSize must be between 1 and 256, got " + poolSize);
            }
            this.poolSize = poolSize;
            return this;
        }

        /** What every memcached key of the store starts with (default {@code dlock:}); at most 64 bytes in UTF-8. */
        public Builder keyPrefix(String keyPrefix) {
            if (keyPrefix == null || keyPrefix.getBytes(StandardCharsets.UTF_8).length > MemcachedKeys.MAX_PREFIX_BYTES) {
                throw new IllegalArgumentException("keyPrefix must be at most " + MemcachedKeys.MAX_PREFIX_BYTES
                        + " bytes in UTF-8, got " + keyPrefix);
            }
            this.keyPrefix = keyPrefix;
            return this;
        }

        /** Creates the backend; it connects on first use, so a server that is down fails calls, not the build. */
        public MemcachedLockBackend build() {
            return new MemcachedLockBackend(this);
        }

        private static List<InetSocketAddress> parseServers(List<String> servers) {
            List<InetSocketAddress> addresses = new ArrayList<>();
            for (String server : servers == null ? List.<String>of() : servers) {
                String entry = server == null ? "" : server.strip();
                if (!entry.isEmpty()) {
                    addresses.add(parseServer(entry));
                }
            }
            if (addresses.isEmpty()) {
                throw new IllegalArgumentException("servers must name at least one memcached server as host[:port], got " + servers);
            }
            if (addresses.stream().distinct().count() < addresses.size()) {
                throw new IllegalArgumentException("servers must not name a server twice, got " + servers);
            }
            return List.copyOf(addresses);
        }

        private static InetSocketAddress parseServer(String entry) {
            int colon = entry.lastIndexOf(':');
            boolean hasPort = colon > 0 && entry.indexOf(']') < colon && (entry.indexOf(':') == colon || entry.startsWith("["));
            String host = hasPort ? entry.substring(0, colon) : entry;
            int port = DEFAULT_PORT;
            if (hasPort) {
                try {
                    port = Integer.parseInt(entry.substring(colon + 1));
                } catch (NumberFormatException e) {
                    port = -1;
                }
            }
            if (host.startsWith("[") && host.endsWith("]")) {
                host = host.substring(1, host.length() - 1);
            }
            if (host.isEmpty() || port < 1 || port > 65_535) {
                throw new IllegalArgumentException("a memcached server is host[:port] with a port from 1 to 65535, got '" + entry + "'");
            }
            // Resolved when connecting, so that a name that moves is followed.
            return InetSocketAddress.createUnresolved(host, port);
        }
    }
}
