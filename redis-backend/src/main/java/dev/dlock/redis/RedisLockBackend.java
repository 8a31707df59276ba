package dev.dlock.redis;

import java.net.ConnectException;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import java.util.EnumSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LocalHandOff;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockKind;
import dev.dlock.core.PermitsMismatchException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.core.spi.TokensOnRequest;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * The Redis lock store over a Jedis {@link UnifiedJedis} (standalone, Sentinel or cluster), for every {@link LockKind}:
 * an exclusive lock takes a free key with a plain {@code SET NX PX}, every other write to a held key is one Lua script
 * that compares the owner first, and releases reach waiters over pub/sub (sharded pub/sub on a Redis 7+ cluster).
 * Fencing tokens are {@code max(counter + 1, server time in microseconds)}, so they keep rising across a failover;
 * an exclusive holder's token is issued the first time it asks ({@link #issueFencingToken}).
 * Details (keys, round trips, tokens, release records, kinds): docs/stores.md#redis-how-keys-look.
 */
public final class RedisLockBackend implements LockBackend, RenewalGrouping, LocalHandOff, TokensOnRequest, LeaseExtension {

    private static final Logger log = LoggerFactory.getLogger(RedisLockBackend.class);

    /** The key prefix used when none is configured. */
    public static final String DEFAULT_KEY_PREFIX = "dlock:";
    /** How long an idle fencing counter is kept when nothing else is configured. */
    public static final Duration DEFAULT_FENCING_COUNTER_TTL = Duration.ofHours(24);
    /** The most keys one renew call carries when nothing else is configured. */
    public static final int DEFAULT_RENEWAL_BATCH_SIZE = 100;
    /** The largest allowed renewal batch; bigger scripts block Redis for too long. */
    public static final int MAX_RENEWAL_BATCH_SIZE = 10_000;
    /** How long a fair waiter keeps its place without asking again, when nothing else is configured. */
    public static final Duration DEFAULT_FAIR_WAITER_TIMEOUT = Duration.ofSeconds(3);
    /** The shortest allowed fair waiter timeout: waiters ask again every third of it. */
    public static final Duration MIN_FAIR_WAITER_TIMEOUT = Duration.ofMillis(100);

    /**
     * How long a release's record of the releasing owner lives, in ms: far longer than any repeat of the release can
     * come (the engine retries a release for at most 2 s, a client library's retry within its own call), with room
     * for a paused JVM between attempts; short, since every released key keeps one such small key that long.
     */
    static final long RELEASE_RECORD_MILLIS = 60_000;
    private static final String RELEASE_RECORD_TTL = Long.toString(RELEASE_RECORD_MILLIS);
    /**
     * The most records of released owners a read or permits set keeps ({@code shared_release.lua}): a repeat is
     * misread as lost only when more than this many other owners released the key's shares between the release and its
     * repeat (the engine repeats within 2 s); it bounds the record at a few hundred kB on the hottest key.
     */
    static final int MAX_SHARED_RELEASE_RECORDS = 10_000;
    private static final String SHARED_RELEASE_RECORDS = Integer.toString(MAX_SHARED_RELEASE_RECORDS);
    private static final String ISSUE_NOW = "issue";
    private static final String ISSUE_ON_REQUEST = "on-request";
    private static final long ACQUIRED = 1;
    /** permits_acquire.lua's answer when the key's holders took it with another number of permits. */
    private static final long PERMITS_DIFFER = 2;
    /** The most refused owners {@link #refusedOwners} keeps: far more than acquisitions wait at once in one JVM. */
    private static final int MAX_REFUSED_OWNERS = 10_000;
    /** What the fast path's SET NX answers when it took the key, in the acquire script's shape. */
    private static final List<Long> TAKEN_WITHOUT_TOKEN = List.of(ACQUIRED, AcquireResult.Acquired.TOKEN_ON_REQUEST);
    private static final long RELEASED = 1;
    private static final long ALREADY_FREE = 2;
    private static final String SHARDED_PUBLISH = "sharded";
    private static final String CLASSIC_PUBLISH = "classic";
    private static final String BOTH_PUBLISH = "both";

    // The preludes hold the rules several scripts share: fencing.lua the fencing token, notices.lua the waiter's
    // mark and how a release notice is published, kind_prelude.lua the sets of expiring read leases and permits.
    // Each script gets only the preludes it calls: Redis builds every prelude function anew on each call.
    private static final String FENCING = "fencing.lua";
    private static final String NOTICES = "notices.lua";
    private static final String SHARES = "kind_prelude.lua";
    private static final LuaScript ACQUIRE = LuaScript.load("acquire.lua", FENCING, NOTICES);
    private static final LuaScript RELEASE = LuaScript.load("release.lua", NOTICES);
    private static final LuaScript RENEW = LuaScript.load("renew.lua", NOTICES);
    private static final LuaScript RAISE_FENCE = LuaScript.load("raise_fence.lua");
    private static final LuaScript HAND_OFF = LuaScript.load("handoff.lua", FENCING, NOTICES);
    private static final LuaScript ISSUE_TOKEN = LuaScript.load("issue_token.lua", FENCING, NOTICES);
    private static final LuaScript PERMITS_ACQUIRE = LuaScript.load("permits_acquire.lua", FENCING, SHARES);
    private static final LuaScript READ_ACQUIRE = LuaScript.load("read_acquire.lua", FENCING, SHARES);
    private static final LuaScript WRITE_ACQUIRE = LuaScript.load("write_acquire.lua", FENCING, SHARES);
    private static final LuaScript WRITE_WITHDRAW = LuaScript.load("write_withdraw.lua", NOTICES);
    private static final LuaScript FAIR_ACQUIRE = LuaScript.load("fair_acquire.lua", FENCING, NOTICES);
    private static final LuaScript FAIR_WITHDRAW = LuaScript.load("fair_withdraw.lua", NOTICES);
    private static final LuaScript SHARED_RELEASE = LuaScript.load("shared_release.lua", FENCING, SHARES, NOTICES);
    private static final LuaScript SHARED_RENEW = LuaScript.load("shared_renew.lua", FENCING, SHARES);
    private static final LuaScript SHORTEN = LuaScript.load("shorten.lua", NOTICES);
    private static final LuaScript SHARED_SHORTEN = LuaScript.load("shared_shorten.lua", FENCING, SHARES);

    private final UnifiedJedis client;
    private final RedisKeys keys;
    private final String counterTtlMillis;
    /** False for Redlock's nodes: every exclusive acquisition issues its token in the acquire script. */
    private final boolean tokensOnRequest;
    /**
     * Owners (one per acquisition) whose last exclusive attempt here was refused: their next attempt goes straight to
     * the acquire script, so that the holder's value is marked in that round trip and not one later (a holding JVM
     * passes the key on locally until it sees the mark). Dropped when the owner takes the key or withdraws.
     */
    private final Set<String> refusedOwners = ConcurrentHashMap.newKeySet();
    private final int renewalBatchSize;
    private final boolean cluster;
    private final int replicasToAwait;
    private final long replicaTimeoutMillis;
    private final ClusterNodes clusterNodes;
    private final SlotRenewals slotRenewals;
    private final SlotRenewals sharedSlotRenewals;
    /** How long a fair waiter or a waiting writer keeps its place without asking again, in ms. */
    private final String waiterTimeoutMillis;
    /** How the release script publishes its notice: {@code sharded}, {@code classic} or {@code both}. */
    private final String releasePublish;
    private final Object pubSubModeLock = new Object();
    /** Null until chosen: by the builder, by the client type, or by asking the cluster's nodes. */
    private volatile Boolean shardedPubSub;
    private final LazyReleaseNotices releaseNotices;
    /** Null when round trips are not coalesced ({@link Builder#coalesceRoundTrips}). */
    private final ScriptCoalescer coalescer;

    private RedisLockBackend(Builder builder) {
        this.client = builder.client;
        this.keys = new RedisKeys(builder.keyPrefix);
        this.counterTtlMillis = Long.toString(builder.fencingCounterTtl.toMillis());
        this.tokensOnRequest = builder.fencingTokensOnRequest;
        this.renewalBatchSize = builder.renewalBatchSize;
        this.clusterNodes = ClusterNodes.of(client);
        this.cluster = builder.cluster != null ? builder.cluster : clusterNodes != null;
        this.replicasToAwait = builder.replicasToAwait;
        this.replicaTimeoutMillis = builder.replicaTimeout.toMillis();
        this.slotRenewals = new SlotRenewals(client, clusterNodes, RENEW);
        this.sharedSlotRenewals = new SlotRenewals(client, clusterNodes, SHARED_RENEW);
        this.waiterTimeoutMillis = Long.toString(builder.fairWaiterTimeout.toMillis());
        this.shardedPubSub = builder.shardedPubSub != null ? builder.shardedPubSub : clusterNodes == null ? Boolean.FALSE : null;
        if (Boolean.TRUE.equals(shardedPubSub) && clusterNodes == null) {
            throw new IllegalArgumentException("shardedPubSub(true) needs a cluster client (RedisClusterClient or "
                    + "JedisCluster), got " + client.getClass().getName());
        }
        // Unless pinned, a cluster's JVMs may wait either way (each chooses on its own, e.g. mid-upgrade): publish both.
        this.releasePublish = shardedPubSub == null ? BOTH_PUBLISH : shardedPubSub ? SHARDED_PUBLISH : CLASSIC_PUBLISH;
        this.coalescer = builder.coalesceRoundTrips ? new ScriptCoalescer(client, clusterNodes, cluster,
                builder.minCoalescingLanes, builder.maxCoalescingLanes) : null;
        this.releaseNotices = new LazyReleaseNotices(() -> new PubSubReleaseNotices(keys, usesShardedPubSub()
                ? notices -> new ShardedPubSubTransport(clusterNodes, notices)
                : notices -> new ClassicPubSubTransport(client, keys.controlChannel(), notices)));
    }

    /** Starts configuring a backend over {@code client}, which the backend uses but never closes. */
    public static Builder builder(UnifiedJedis client) {
        return new Builder(client);
    }

    /**
     * Every kind (exclusive, fair, read, write and permits); fencing tokens, an exclusive lock's issued on request;
     * the local hand-off; renewals grouped by the node of each key ({@link #nodeOf}); release notices (classic pub/sub,
     * or sharded with one connection per node, connected on the first subscription); who holds a key, read by a
     * read-only script, and an operator's forced release (one script per call); extensions of a fixed lease of every
     * kind.
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withModes(EnumSet.allOf(LockKind.Mode.class)).withLocalHandOff(this)
                .withTokensOnRequest(this).withLeaseExtension(this).withRenewalGrouping(this)
                .withReleaseNotices(releaseNotices)
                .withHolderInspection(new RedisHolderInspection(client, keys, releasePublish));
    }

    /**
     * Takes {@code key}'s lock of {@code kind}. Exclusive: a plain SET NX PX, with no fencing token
     * ({@link AcquireResult.Acquired#TOKEN_ON_REQUEST}: {@link #issueFencingToken} issues it when asked); refused, the
     * acquire script tries again, marks the holder and reports its TTL, and takes a key {@code owner} already holds
     * (a retried call whose first reply was lost): lease extended. The other kinds run one script each, which issues
     * the token; see {@link RedisLockBackend} for what a token promises. They are idempotent for their owner the same
     * way. Held means: for permits, all taken (the TTL is the earliest holder's); for a read, a writer
     * holds or waits; for a write, another writer holds it or readers do (the writer then waits with an
     * intent that stops new readers, and must ask again within the TTL to keep it); for a fair acquisition,
     * held or another waiter is ahead (the owner keeps its place while it asks again within the TTL).
     */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        return tryAcquire(kind, key, owner, leaseMillis, false);
    }

    /**
     * As {@link #tryAcquire(LockKind, String, String, long)}; with {@code issueToken} an exclusive acquisition goes
     * straight to the acquire script, which takes the key and issues its fencing token in the same round trip (the
     * other kinds always do).
     */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis, boolean issueToken) {
        Objects.requireNonNull(kind, "kind");
        requireOwner(owner);
        requirePositive(leaseMillis, "leaseMillis");
        String lease = Long.toString(leaseMillis);
        String counter = keys.counterKey(key);
        return switch (kind.mode()) {
            case EXCLUSIVE -> acquireExclusive(key, owner, leaseMillis, issueToken || !tokensOnRequest);
            case FAIR -> acquire(FAIR_ACQUIRE, kind, key, owner,
                    List.of(keys.lockKey(key), keys.fairQueueKey(key), keys.fairSeenKey(key), counter),
                    List.of(owner, lease, counterTtlMillis, waiterTimeoutMillis));
            case READ -> acquire(READ_ACQUIRE, kind, key, owner,
                    List.of(keys.writerKey(key), keys.readersKey(key), keys.writerWaitingKey(key), counter),
                    List.of(owner, lease, counterTtlMillis));
            case WRITE -> acquire(WRITE_ACQUIRE, kind, key, owner,
                    List.of(keys.writerKey(key), keys.readersKey(key), keys.writerWaitingKey(key), counter),
                    List.of(owner, lease, counterTtlMillis, waiterTimeoutMillis));
            case PERMITS -> acquire(PERMITS_ACQUIRE, kind, key, owner, List.of(keys.permitsKey(key), counter, keys.permitsCountKey(key)),
                    List.of(owner, lease, counterTtlMillis, Integer.toString(kind.permits())));
        };
    }

    /**
     * The exclusive fast path: SET NX PX, no script and no token; only when refused, or when the token is issued now
     * ({@code issueToken}: a holder that reads it, or Redlock's nodes), the acquire script.
     */
    private AcquireResult acquireExclusive(String key, String owner, long leaseMillis, boolean issueToken) {
        String lockKey = keys.lockKey(key);
        // isEmpty first: an owner token is long, and hashing it on every acquisition shows in a profile.
        if (!issueToken && (refusedOwners.isEmpty() || !refusedOwners.contains(owner))) {
            AcquireResult taken = acquire(LockKind.EXCLUSIVE, key, owner, (pipeline, fullScript) -> {
                Response<String> set = pipeline.set(lockKey, owner, JedisGeneration.setIfAbsent(leaseMillis));
                return () -> "OK".equals(set.get()) ? TAKEN_WITHOUT_TOKEN : null;
            }, () -> "OK".equals(setIfAbsent(key, lockKey, owner, leaseMillis)) ? TAKEN_WITHOUT_TOKEN : null);
            if (taken != null) {
                return taken;
            }
        }
        AcquireResult answer = acquire(ACQUIRE, LockKind.EXCLUSIVE, key, owner, List.of(lockKey, keys.counterKey(key)),
                List.of(owner, Long.toString(leaseMillis), counterTtlMillis, issueToken ? ISSUE_NOW : ISSUE_ON_REQUEST));
        if (tokensOnRequest) {
            if (answer instanceof AcquireResult.Held) {
                if (refusedOwners.size() >= MAX_REFUSED_OWNERS) {
                    // Owners the engine never withdrew (it always does; this only bounds the set): back to SET first.
                    refusedOwners.clear();
                }
                refusedOwners.add(owner);
            } else {
                refusedOwners.remove(owner);
            }
        }
        return answer;
    }

    /** SET NX PX of the lock key, in a pipeline with other threads' calls to the same node when coalescing. */
    private String setIfAbsent(String key, String lockKey, String owner, long leaseMillis) {
        return coalescer == null ? client.set(lockKey, owner, JedisGeneration.setIfAbsent(leaseMillis))
                : coalescer.setIfAbsent(slotOf(key), lockKey, owner, leaseMillis);
    }

    private AcquireResult acquire(LuaScript script, LockKind kind, String key, String owner, List<String> scriptKeys,
                                  List<String> scriptArgs) {
        return acquire(kind, key, owner, (pipeline, fullScript) -> {
            Response<Object> reply = fullScript ? pipeline.eval(script.source(), scriptKeys, scriptArgs)
                    : pipeline.evalsha(script.sha1(), scriptKeys, scriptArgs);
            return reply::get;
        }, () -> runScript(script, key, scriptKeys, scriptArgs));
    }

    /**
     * Sends one acquisition command ({@code alone}, or {@code withWait} in front of WAIT when replicas must acknowledge)
     * and reads its reply: {@code {1, token}}, {@code {0, ttl}} or {@code {0, ttl, ahead}}; null (the SET NX of the fast
     * path refused) is answered null. A reply that may have been lost releases what the command may have taken.
     */
    private AcquireResult acquire(LockKind kind, String key, String owner, PipelinedCommand withWait, Supplier<Object> alone) {
        Object reply;
        long acknowledged = replicasToAwait;
        try {
            if (replicasToAwait == 0) {
                reply = alone.get();
            } else {
                AcquireWithWait answer = acquireAndAwaitReplicas(key, withWait);
                reply = answer.reply();
                acknowledged = answer.acknowledged();
            }
        } catch (JedisException e) {
            if (commandMayHaveReachedServer(e)) {
                // The command may have run before the reply was lost; do not leave the key locked until the lease ends.
                releaseQuietly(kind, key, owner);
            }
            throw failure("tryAcquire", key, e);
        }
        if (reply == null) {
            return null;
        }
        List<?> result = (List<?>) reply;
        long status = toLong(result.get(0));
        long value = toLong(result.get(1));
        if (status == ACQUIRED && acknowledged < replicasToAwait) {
            // A lock only the master knows is lost if the master fails now; do not hand it out.
            releaseQuietly(kind, key, owner);
            throw new LockBackendException("Redis tryAcquire of key '" + key + "': only " + acknowledged + " of "
                    + replicasToAwait + " replicas acknowledged the lock within " + replicaTimeoutMillis
                    + " ms (waitForReplicas); the lock was released again", null);
        }
        if (status == ACQUIRED) {
            return new AcquireResult.Acquired(value);
        }
        if (status == PERMITS_DIFFER) {
            throw new PermitsMismatchException(key, (int) value, kind.permits());
        }
        return result.size() > 2 ? new AcquireResult.Held(value, (int) toLong(result.get(2))) : new AcquireResult.Held(value);
    }

    /**
     * Sends the acquisition command and {@code WAIT} on one connection, pipelined: WAIT counts the replicas
     * that acknowledged the writes of its own connection, so two pooled calls could wait for nothing. A script the
     * node does not know is sent again in full.
     */
    private AcquireWithWait acquireAndAwaitReplicas(String key, PipelinedCommand command) {
        try {
            return acquireAndAwaitReplicas(key, command, false);
        } catch (JedisNoScriptException e) {
            return acquireAndAwaitReplicas(key, command, true);
        }
    }

    private AcquireWithWait acquireAndAwaitReplicas(String key, PipelinedCommand command, boolean fullScript) {
        try (Pipeline pipeline = singleConnectionPipeline(key)) {
            Supplier<Object> reply = command.queue(pipeline, fullScript);
            Response<Long> acknowledged = pipeline.waitReplicas(replicasToAwait, replicaTimeoutMillis);
            pipeline.sync();
            return new AcquireWithWait(reply.get(), acknowledged.get());
        }
    }

    /** One acquisition command queued in a pipeline (a script in full when {@code fullScript}); its reply, read after the sync. */
    private interface PipelinedCommand {
        Supplier<Object> queue(Pipeline pipeline, boolean fullScript);
    }

    @SuppressWarnings("resource")
    private Pipeline singleConnectionPipeline(String key) {
        if (clusterNodes != null) {
            return new Pipeline(JedisGeneration.connectionFromSlot(client, keys.slot(key)), true);
        }
        AbstractPipeline pipeline = JedisGeneration.pipelined(client);
        if (pipeline instanceof Pipeline single) {
            return single;
        }
        pipeline.close();
        throw new IllegalStateException("waitForReplicas needs a client whose pipelines use one connection "
                + "(RedisClient, RedisSentinelClient, RedisClusterClient); got " + client.getClass().getName());
    }

    /** The acquire script's reply and how many replicas acknowledged it. */
    private record AcquireWithWait(Object reply, long acknowledged) {
    }

    /**
     * Releases {@code key}'s lock of {@code kind} if {@code owner} holds it, and tells the key's waiters of
     * every kind, with a release notice. Exclusive, fair and write: {@code ALREADY_FREE} when it repeats the owner's own
     * release (recorded beside the key for {@value #RELEASE_RECORD_MILLIS} ms), {@code NOT_OWNER} for any other free
     * or taken key, a lease that ran out unreleased included; {@code fencingToken} is not needed. Read and permits
     * alike, with one record per releasing owner (a sorted set beside the members' set, purged as it goes and bounded
     * at {@value #MAX_SHARED_RELEASE_RECORDS} records): a share the owner no longer holds is {@code ALREADY_FREE} only
     * when its own release is recorded, {@code NOT_OWNER} when the store lost it (a restart without persistence, a
     * failover to a replica that missed it, a forced release) or it ran out unreleased.
     */
    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        Objects.requireNonNull(kind, "kind");
        requireOwner(owner);
        try {
            return releaseOnce(kind, key, owner);
        } catch (JedisException e) {
            throw failure("release", key, e);
        }
    }

    /**
     * Keeps {@code key} taken for its next holder in this JVM, now by {@code nextOwner}, in one script: the owner
     * check, the new owner (a waiter's mark carried over) and the lease ({@code leaseMillis}, or the key's expiry as
     * it is for 0). No token is issued: the next holder asks for its own ({@link #issueFencingToken}). Whether others
     * wait is the mark a refused acquisition leaves on the key's value; {@link HandOffResult#NOT_HELD} when
     * {@code owner} no longer holds the key.
     */
    @Override
    public HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis) {
        return handOff(key, owner, nextOwner, leaseMillis, false);
    }

    /**
     * As {@link #handOff(String, String, String, long)}; with {@code issueToken} the same script also issues the next
     * holder's fencing token (by the rule of {@link RedisLockBackend}), after the owner check: a lost lease passes on
     * nothing and issues nothing. A repeated hand-off (the key already {@code nextOwner}'s) changes nothing and answers
     * without a token, which the next holder then asks for.
     */
    @Override
    public HandOffResult handOff(String key, String owner, String nextOwner, long leaseMillis, boolean issueToken) {
        requireOwner(owner);
        requireOwner(nextOwner);
        if (leaseMillis < 0) {
            throw new IllegalArgumentException("leaseMillis must not be negative, got " + leaseMillis);
        }
        String lease = Long.toString(leaseMillis);
        Object reply;
        try {
            reply = issueToken
                    ? runScript(HAND_OFF, key, List.of(keys.lockKey(key), keys.counterKey(key)), List.of(owner, nextOwner, lease, counterTtlMillis))
                    : runScript(HAND_OFF, key, List.of(keys.lockKey(key)), List.of(owner, nextOwner, lease));
        } catch (JedisException e) {
            throw failure("handOff", key, e);
        }
        List<?> result = (List<?>) reply;
        long waited = toLong(result.get(0));
        return waited < 0 ? HandOffResult.NOT_HELD : new HandOffResult.Passed(toLong(result.get(1)), waited == 1);
    }

    /**
     * Gives {@code owner}'s lease to {@code retiredOwner} with {@code keepMillis} left, in one script: the owner key
     * rewritten (exclusive, fair, write), or the member replaced (read, permits).
     */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        return newTerm("shorten", kind, key, owner, retiredOwner, keepMillis);
    }

    /**
     * Gives {@code owner}'s live lease to {@code nextOwner} for {@code leaseMillis} from now, in the script a shortening
     * runs: the owner key rewritten (exclusive, fair, write; a waiter's mark kept), or the member replaced (read,
     * permits), so no late command of {@code owner} finds it. The token stays the hold's.
     */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        return newTerm("extend", kind, key, owner, nextOwner, leaseMillis);
    }

    /** One owner-checked script that gives {@code owner}'s lease to {@code nextOwner} for {@code millis} from now. */
    private RenewalResult newTerm(String operation, LockKind kind, String key, String owner, String nextOwner, long millis) {
        Objects.requireNonNull(kind, "kind");
        requireOwner(owner);
        requireOwner(nextOwner);
        requirePositive(millis, "leaseMillis");
        Object reply;
        try {
            reply = runScript(kind.shared() ? SHARED_SHORTEN : SHORTEN, key, List.of(leaseKey(kind, key)),
                    List.of(owner, nextOwner, Long.toString(millis)));
        } catch (JedisException e) {
            throw failure(operation, key, e);
        }
        long code = toLong(reply);
        return code == 1 ? RenewalResult.RENEWED : code == 0 ? RenewalResult.EXPIRED : RenewalResult.TAKEN;
    }

    /**
     * Issues {@code key}'s next fencing token (the rule of {@link RedisLockBackend}) in one owner-checked script,
     * while {@code owner} holds its lock of {@code kind} (exclusive, fair or write; a waiter's mark on it is no
     * matter); empty, with nothing written, when it does not.
     */
    @Override
    public OptionalLong issueFencingToken(LockKind kind, String key, String owner) {
        Objects.requireNonNull(kind, "kind");
        requireOwner(owner);
        if (kind.shared()) {
            throw new UnsupportedOperationException("Redis issues the fencing token of a " + kind
                    + " lock with its acquisition; key '" + key + "'");
        }
        Object reply;
        try {
            reply = runScript(ISSUE_TOKEN, key, List.of(keys.leaseKey(kind, key), keys.counterKey(key)),
                    List.of(owner, counterTtlMillis));
        } catch (JedisException e) {
            throw failure("issueFencingToken", key, e);
        }
        long token = toLong(reply);
        return token < 0 ? OptionalLong.empty() : OptionalLong.of(token);
    }

    /**
     * A fair waiter leaves the queue (and wakes the next one when it was first and the lock is free); a
     * waiting writer drops its intent, so readers may come in again. Nothing for the other kinds. A store
     * failure is logged, not thrown: a place not given back lapses after {@link Builder#fairWaiterTimeout}.
     */
    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        Objects.requireNonNull(kind, "kind");
        requireOwner(owner);
        refusedOwners.remove(owner);
        try {
            switch (kind.mode()) {
                case FAIR -> runScript(FAIR_WITHDRAW, key, List.of(keys.lockKey(key), keys.fairQueueKey(key),
                        keys.fairSeenKey(key), keys.releaseChannel(key)), List.of(owner, releasePublish));
                case WRITE -> runScript(WRITE_WITHDRAW, key, List.of(keys.writerWaitingKey(key), keys.releaseChannel(key)),
                        List.of(owner, releasePublish));
                default -> {
                    // No place kept between attempts.
                }
            }
        } catch (JedisException e) {
            log.debug("Withdrawing owner's {} wait on key '{}' failed; its place lapses after the waiter timeout: {}",
                    kind, key, e.toString());
        }
    }

    /**
     * Extends every lease of the batch whose owner matches: one script per cluster slot (one for the
     * whole batch otherwise), and the scripts of one node in one pipeline, so one round trip per node.
     * Each key goes to the node owning its slot now, whatever group the batch was formed by.
     */
    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        Objects.requireNonNull(batch, "batch");
        if (batch.isEmpty()) {
            return List.of();
        }
        if (batch.size() > renewalBatchSize) {
            throw new IllegalArgumentException("renew batch has " + batch.size()
                    + " entries, more than renewalBatchSize " + renewalBatchSize);
        }
        // Exclusive, fair and write leases are one owner key each (renew.lua); read leases and permits are
        // members of a sorted set (shared_renew.lua). A batch of one sort costs what it always did.
        Map<Integer, SlotRenewals.SlotBatch> bySlot = new LinkedHashMap<>();
        Map<Integer, SlotRenewals.SlotBatch> sharedBySlot = null;
        for (int i = 0; i < batch.size(); i++) {
            LeaseRenewal renewal = batch.get(i);
            requireOwner(renewal.owner());
            requirePositive(renewal.leaseMillis(), "leaseMillis");
            LockKind kind = renewal.kind();
            if (kind == null) {
                throw new IllegalArgumentException("renew batch entry for key '" + renewal.key() + "' has no kind");
            }
            int slot = cluster ? keys.slot(renewal.key()) : 0;
            if (kind.shared() && sharedBySlot == null) {
                sharedBySlot = new LinkedHashMap<>();
            }
            (kind.shared() ? sharedBySlot : bySlot).computeIfAbsent(slot, SlotRenewals.SlotBatch::new)
                    .add(leaseKey(kind, renewal.key()), renewal.owner(), renewal.leaseMillis(), i);
        }
        RenewalResult[] results = new RenewalResult[batch.size()];
        if (!bySlot.isEmpty()) {
            renewBySlot(RENEW, slotRenewals, bySlot, batch, results);
        }
        if (sharedBySlot != null) {
            renewBySlot(SHARED_RENEW, sharedSlotRenewals, sharedBySlot, batch, results);
        }
        return List.of(results);
    }

    /** Runs one renew script per slot (pipelined per node) and writes each lease's outcome at its batch position. */
    private void renewBySlot(LuaScript script, SlotRenewals renewals, Map<Integer, SlotRenewals.SlotBatch> bySlot,
                             List<LeaseRenewal> batch, RenewalResult[] results) {
        List<SlotRenewals.SlotBatch> scripts = List.copyOf(bySlot.values());
        List<List<?>> replies;
        try {
            replies = scripts.size() == 1
                    ? List.of((List<?>) script.run(client, scripts.get(0).keys, scripts.get(0).args))
                    : renewals.run(scripts);
        } catch (JedisException e) {
            throw LockBackendException.storeFailure("Redis renew of " + batch.size() + " keys starting with '"
                    + batch.get(0).key() + "' failed", e);
        }
        for (int s = 0; s < scripts.size(); s++) {
            List<Integer> positions = scripts.get(s).positions;
            List<?> reply = replies.get(s);
            for (int k = 0; k < positions.size(); k++) {
                long code = toLong(reply.get(k));
                results[positions.get(k)] = code == 1 ? RenewalResult.RENEWED
                        : code == 0 ? RenewalResult.EXPIRED : RenewalResult.TAKEN;
            }
        }
    }

    /** The Redis key that records {@code owner}'s lease of {@code kind}: its owner key, or the set it is a member of. */
    private String leaseKey(LockKind kind, String key) {
        return keys.leaseKey(kind, key);
    }

    /**
     * In cluster mode the master that the client's slot cache names for the key's slot ({@code "host:port"}),
     * or {@code "slot N"} when the owner is unknown or the client is not a cluster client (a proxy);
     * otherwise {@link StoreNode#SINGLE}.
     */
    @Override
    public StoreNode nodeOf(String key) {
        if (!cluster) {
            return StoreNode.SINGLE;
        }
        int slot = keys.slot(key);
        HostAndPort owner = clusterNodes == null ? null : clusterNodes.slotOwner(slot);
        return new StoreNode(owner != null ? owner.toString() : "slot " + slot);
    }

    /** The configured {@code renewalBatchSize}. */
    @Override
    public int maxBatchSize() {
        return renewalBatchSize;
    }

    /** One PING round trip, in nanoseconds. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        try {
            client.ping();
        } catch (JedisException e) {
            throw LockBackendException.storeFailure("Redis ping failed", e);
        }
        return System.nanoTime() - start;
    }

    /**
     * Raises {@code key}'s fencing counter to at least {@code token}, for {@link RedlockBackend}: the
     * next acquisition on this node then issues a larger token than any the quorum issued.
     */
    void raiseFencingCounter(String key, long token) {
        try {
            RAISE_FENCE.run(client, List.of(keys.counterKey(key)), List.of(Long.toString(token), counterTtlMillis));
        } catch (JedisException e) {
            throw failure("raise the fencing counter", key, e);
        }
    }

    /**
     * True when waiters use SSUBSCRIBE, false for classic SUBSCRIBE. Chosen once: by
     * {@link Builder#shardedPubSub}, else false for a non-cluster client, else true when every
     * cluster node that answers runs Redis 7 or later (asked on the first subscription). Releases do
     * not depend on it: unless pinned, a cluster release publishes both ways.
     * Throws {@link redis.clients.jedis.exceptions.JedisException} when no node answers; asked again next time.
     */
    boolean usesShardedPubSub() {
        Boolean chosen = shardedPubSub;
        if (chosen != null) {
            return chosen;
        }
        synchronized (pubSubModeLock) {
            if (shardedPubSub == null) {
                shardedPubSub = clusterNodes.allSupportShardedPubSub();
                log.debug("Release notices use {} pub/sub", shardedPubSub ? "sharded" : "classic");
            }
            return shardedPubSub;
        }
    }

    /** The pub/sub notices once the first subscription created them, for tests; null before. */
    PubSubReleaseNotices createdReleaseNotices() {
        return releaseNotices.created();
    }

    /** True when concurrent threads' scripts to one node share a pipeline ({@link Builder#coalesceRoundTrips}). */
    public boolean coalescesRoundTrips() {
        return coalescer != null;
    }

    /** True when renewals are grouped by cluster node (or slot), and a renew script never spans two slots. */
    public boolean isCluster() {
        return cluster;
    }

    /** Stops the release-notice threads and their connections; the client stays open. */
    @Override
    public void close() {
        releaseNotices.close();
    }

    private ReleaseResult releaseOnce(LockKind kind, String key, String owner) {
        Object reply = kind.shared()
                ? runScript(SHARED_RELEASE, key, List.of(leaseKey(kind, key), keys.releaseChannel(key), keys.lastReleaseKey(kind, key)),
                        List.of(owner, releasePublish, RELEASE_RECORD_TTL, SHARED_RELEASE_RECORDS))
                : runScript(RELEASE, key, List.of(leaseKey(kind, key), keys.releaseChannel(key), keys.lastReleaseKey(kind, key)),
                        List.of(owner, releasePublish, kind.mode() == LockKind.Mode.WRITE ? "always" : "marked", RELEASE_RECORD_TTL));
        long code = toLong(reply);
        return code == RELEASED ? ReleaseResult.RELEASED : code == ALREADY_FREE ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
    }

    /** Runs one of {@code key}'s scripts, in a pipeline with other threads' scripts to the same node when coalescing. */
    private Object runScript(LuaScript script, String key, List<String> scriptKeys, List<String> scriptArgs) {
        return coalescer == null ? script.run(client, scriptKeys, scriptArgs)
                : coalescer.run(script, slotOf(key), scriptKeys, scriptArgs);
    }

    /** The slot of {@code key}'s lock keys on a cluster (the coalescer groups a batch by it); 0 elsewhere. */
    private int slotOf(String key) {
        return cluster || clusterNodes != null ? keys.slot(key) : 0;
    }

    private void releaseQuietly(LockKind kind, String key, String owner) {
        try {
            releaseOnce(kind, key, owner);
        } catch (RuntimeException e) {
            log.debug("Best-effort release of key '{}' after a failed acquire also failed: {}", key, e.toString());
        }
    }

    /** False only when the failure proves the command never left this JVM (connection refused, pool exhausted). */
    private static boolean commandMayHaveReachedServer(JedisException e) {
        if (e instanceof JedisDataException) {
            // The server answered with an error: the script ran, or failed, atomically.
            return false;
        }
        for (Throwable cause = e; cause != null; cause = cause.getCause()) {
            if (cause instanceof ConnectException || cause instanceof NoSuchElementException) {
                return false;
            }
        }
        return true;
    }

    private static LockBackendException failure(String operation, String key, JedisException e) {
        return LockBackendException.storeFailure("Redis " + operation + " of key '" + key + "' failed", e);
    }

    private static long toLong(Object reply) {
        if (reply instanceof Long value) {
            return value;
        }
        if (reply instanceof String text) {
            return Long.parseLong(text);
        }
        if (reply instanceof byte[] bytes) {
            return Long.parseLong(new String(bytes, StandardCharsets.US_ASCII));
        }
        throw new IllegalStateException("Unexpected reply from a dlock Lua script: " + reply);
    }

    /** The TTL if it is at least 1 ms; shared by the builders of every Redis backend. */
    static Duration validFencingCounterTtl(Duration fencingCounterTtl) {
        if (fencingCounterTtl == null || fencingCounterTtl.toMillis() <= 0) {
            throw new IllegalArgumentException("fencingCounterTtl must be at least 1 ms, got " + fencingCounterTtl);
        }
        return fencingCounterTtl;
    }

    /** The batch size if it is between 1 and {@link #MAX_RENEWAL_BATCH_SIZE}. */
    static int validRenewalBatchSize(int renewalBatchSize) {
        if (renewalBatchSize < 1 || renewalBatchSize > MAX_RENEWAL_BATCH_SIZE) {
            throw new IllegalArgumentException("renewalBatchSize must be between 1 and " + MAX_RENEWAL_BATCH_SIZE
                    + ", got " + renewalBatchSize);
        }
        return renewalBatchSize;
    }

    static void requireOwner(String owner) {
        if (owner == null || owner.isEmpty()) {
            throw new IllegalArgumentException("owner must not be null or empty");
        }
    }

    private static void requirePositive(long value, String name) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    /** Configures a {@link RedisLockBackend}; every setting is validated when set. */
    public static final class Builder {

        private final UnifiedJedis client;
        private String keyPrefix = DEFAULT_KEY_PREFIX;
        private Duration fencingCounterTtl = DEFAULT_FENCING_COUNTER_TTL;
        private int renewalBatchSize = DEFAULT_RENEWAL_BATCH_SIZE;
        private Boolean cluster;
        private Boolean shardedPubSub;
        private int replicasToAwait;
        private Duration replicaTimeout = Duration.ZERO;
        private Duration fairWaiterTimeout = DEFAULT_FAIR_WAITER_TIMEOUT;
        private boolean coalesceRoundTrips = true;
        private boolean fencingTokensOnRequest = true;
        private int minCoalescingLanes = ScriptCoalescer.MIN_LANES_IN_USE;
        private int maxCoalescingLanes = ScriptCoalescer.LANES_PER_NODE;

        private Builder(UnifiedJedis client) {
            if (client == null) {
                throw new IllegalArgumentException("client must not be null");
            }
            this.client = client;
        }

        /** Prepended to every Redis key and channel (default {@code "dlock:"}); must not contain braces. */
        public Builder keyPrefix(String keyPrefix) {
            this.keyPrefix = RedisKeys.validatePrefix(keyPrefix);
            return this;
        }

        /** How long a fencing counter lives after the key's last acquisition (default 24 h); tokens still increase after it expires. */
        public Builder fencingCounterTtl(Duration fencingCounterTtl) {
            this.fencingCounterTtl = validFencingCounterTtl(fencingCounterTtl);
            return this;
        }

        /** The most keys one renew call carries (default 100, at most 10,000). */
        public Builder renewalBatchSize(int renewalBatchSize) {
            this.renewalBatchSize = validRenewalBatchSize(renewalBatchSize);
            return this;
        }

        /** Whether renewals are grouped by cluster slot (default: true for a JedisCluster or RedisClusterClient). */
        public Builder cluster(boolean cluster) {
            this.cluster = cluster;
            return this;
        }

        /**
         * Pins release notices to sharded pub/sub ({@code true}: releases SPUBLISH, waiters SSUBSCRIBE
         * on the node owning each channel's slot; needs a RedisClusterClient or JedisCluster on Redis 7+)
         * or to classic pub/sub ({@code false}: PUBLISH/SUBSCRIBE).
         *
         * <p>Default for a cluster client: waiters subscribe sharded when every node that answers runs
         * Redis 7 or later, classic otherwise, and every release publishes both ways, so waiters of
         * either mode hear it (JVMs that decided differently, e.g. during an upgrade from Redis 6).
         * The cost of not pinning: each release also runs a classic PUBLISH, which the cluster bus
         * broadcasts to every node. Pin the same mode in every JVM of a cluster to save it: a JVM whose
         * waiters subscribe the other way misses the pinned JVMs' notices and its waiters poll. A pinned
         * sharded notice on a Redis 6 node is dropped, never failing the release. Standalone and
         * Sentinel clients always use classic.
         */
        public Builder shardedPubSub(boolean sharded) {
            this.shardedPubSub = sharded;
            return this;
        }

        /**
         * Makes every successful acquire wait until {@code replicas} replicas acknowledged the lock
         * (Redis {@code WAIT}, on the same connection as the acquire script), for at most
         * {@code timeout}. When fewer acknowledge in time the lock is released again and the acquire
         * throws {@link LockBackendException}. Off by default ({@code replicas = 0}). This narrows,
         * but does not close, the window in which a failover loses a fresh lock: Redis replication
         * stays asynchronous, and WAIT does not make a lock durable.
         */
        public Builder waitForReplicas(int replicas, Duration timeout) {
            if (replicas < 0) {
                throw new IllegalArgumentException("waitForReplicas replicas must not be negative, got " + replicas);
            }
            if (replicas > 0 && (timeout == null || timeout.toMillis() <= 0)) {
                throw new IllegalArgumentException("waitForReplicas timeout must be at least 1 ms, got " + timeout);
            }
            this.replicasToAwait = replicas;
            this.replicaTimeout = replicas == 0 ? Duration.ZERO : timeout;
            return this;
        }

        /**
         * How long a {@link LockKind#FAIR fair} waiter keeps its place in the queue without asking again (default
         * 3 s, at least 100 ms); waiters ask again at least every third of it, so only a dead or cut-off waiter
         * loses its place, and it delays the ones behind it by at most this long. Also how long a waiting
         * writer's intent stops new readers without the writer asking again. Use one value in every JVM of a key.
         */
        public Builder fairWaiterTimeout(Duration fairWaiterTimeout) {
            if (fairWaiterTimeout == null || fairWaiterTimeout.compareTo(MIN_FAIR_WAITER_TIMEOUT) < 0) {
                throw new IllegalArgumentException("fairWaiterTimeout must be at least " + MIN_FAIR_WAITER_TIMEOUT.toMillis()
                        + " ms (waiters ask again every third of it), got " + fairWaiterTimeout);
            }
            this.fairWaiterTimeout = fairWaiterTimeout;
            return this;
        }

        /**
         * Whether the acquire and release scripts that several threads send at the same moment share one
         * pipeline per node (default true): one connection, one write and one read for all of them, where each
         * would otherwise pay its own. A caller alone goes straight through. Renewals and release notices keep
         * their own connections either way. Turn it off to give every call its own pooled connection.
         */
        public Builder coalesceRoundTrips(boolean coalesce) {
            this.coalesceRoundTrips = coalesce;
            return this;
        }

        /**
         * Whether exclusive acquisitions take the key with a plain SET NX and leave the fencing token to be issued when
         * asked for (default true); false issues it in the acquire script, for {@link RedlockBackend}, which needs each
         * node's token at once to raise the others' counters.
         */
        Builder fencingTokensOnRequest(boolean onRequest) {
            this.fencingTokensOnRequest = onRequest;
            return this;
        }

        /** Between how many batches are in flight to one node at once when coalescing (benchmarks compare them). */
        Builder coalescingLanes(int minLanes, int maxLanes) {
            if (minLanes < 1 || maxLanes < minLanes) {
                throw new IllegalArgumentException("coalescingLanes must be at least 1, and minLanes at most maxLanes; got "
                        + minLanes + ", " + maxLanes);
            }
            this.minCoalescingLanes = minLanes;
            this.maxCoalescingLanes = maxLanes;
            return this;
        }

        /** Creates the backend; it opens no connection until the first call or subscription. */
        public RedisLockBackend build() {
            JedisGeneration.requireSupported();
            return new RedisLockBackend(this);
        }
    }
}
