package dev.dlock.redis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.AcquireResult;
import dev.dlock.core.LeaseRenewal;
import dev.dlock.core.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.ReleaseNotices;
import dev.dlock.core.ReleaseResult;
import dev.dlock.core.RenewalResult;

import redis.clients.jedis.UnifiedJedis;

/**
 * The Redlock algorithm over N independent Redis masters: a lock is held when a majority
 * ({@code N/2+1}) of masters took it within its validity. Each master runs the same scripts as a
 * single-Redis {@link RedisLockBackend}; this class only fans out and counts.
 *
 * <ul>
 *   <li>Acquire: the acquire script on every master in parallel. Success needs a quorum and a
 *       positive validity {@code lease - elapsed - drift}, drift being 1 % of the lease plus 2 ms
 *       (the Redis documentation's figures); otherwise the key is released on every master.</li>
 *   <li>Fencing token: the largest token among the masters that granted the lock. That maximum is
 *       then written back to those masters' counters (raised, never lowered), so the next quorum,
 *       which shares at least one master with this one, issues a larger token. A master that lost
 *       its counter (restart, expiry) restarts it at its clock in microseconds, as a single Redis does.</li>
 *   <li>Renew: on every master; a lease is renewed only when a quorum renewed it, otherwise it is
 *       reported {@code TAKEN} or {@code EXPIRED}, whichever the answering masters said more often.</li>
 *   <li>Release: on every master; {@code RELEASED} only when a quorum still held it for the owner.</li>
 *   <li>Fewer than a quorum of masters answering is a {@link LockBackendException}, never "held".</li>
 * </ul>
 *
 * <p>What this does not promise: safety rests on bounded clock drift and on the holder finishing
 * within the validity. A GC pause, a stopped VM or a clock jump longer than the remaining lease
 * lets a second holder in while the first still believes it holds the lock. Where correctness
 * matters, pass the fencing token to the protected resource and let it reject older tokens.
 */
public final class RedlockBackend implements LockBackend {

    private static final Logger log = LoggerFactory.getLogger(RedlockBackend.class);

    /** How long one fan-out waits for the slowest master when nothing else is configured. */
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(5);

    private static final long DRIFT_CONSTANT_MILLIS = 2;
    private static final int DRIFT_PERCENT = 1;
    private static final int THREADS_PER_NODE = 16;

    private final List<RedisLockBackend> nodes;
    private final int quorum;
    private final long operationTimeoutNanos;
    private final ThreadPoolExecutor executor;
    private final RedlockReleaseNotices releaseNotices;

    private RedlockBackend(Builder builder) {
        List<RedisLockBackend> created = new ArrayList<>(builder.masters.size());
        for (UnifiedJedis master : builder.masters) {
            created.add(RedisLockBackend.builder(master)
                    .keyPrefix(builder.keyPrefix)
                    .fencingCounterTtl(builder.fencingCounterTtl)
                    .renewalBatchSize(builder.renewalBatchSize)
                    .cluster(false)
                    .build());
        }
        this.nodes = List.copyOf(created);
        this.quorum = nodes.size() / 2 + 1;
        this.operationTimeoutNanos = builder.operationTimeout.toNanos();
        AtomicInteger threadNumber = new AtomicInteger();
        // Direct hand-off and caller-runs: a burst never queues behind a slow master, and never grows without bound.
        this.executor = new ThreadPoolExecutor(0, nodes.size() * THREADS_PER_NODE, 60, TimeUnit.SECONDS,
                new SynchronousQueue<>(), task -> {
                    Thread thread = new Thread(task, "dlock-redlock-" + threadNumber.incrementAndGet());
                    thread.setDaemon(true);
                    return thread;
                }, new ThreadPoolExecutor.CallerRunsPolicy());
        List<ReleaseNotices> perNode = new ArrayList<>();
        for (RedisLockBackend node : nodes) {
            perNode.add(node.releaseNotices().orElseThrow());
        }
        this.releaseNotices = new RedlockReleaseNotices(perNode);
    }

    /** Starts configuring a backend over independent masters (at least 3, best an odd number); the backend never closes them. */
    public static Builder builder(List<? extends UnifiedJedis> masters) {
        return new Builder(masters);
    }

    /** How many masters must agree: {@code N/2+1}. */
    public int quorum() {
        return quorum;
    }

    /** How many masters this backend spans. */
    public int nodeCount() {
        return nodes.size();
    }

    /** The clock drift Redlock subtracts from a lease: 1 % of it plus 2 ms. */
    public static long driftMillis(long leaseMillis) {
        return leaseMillis * DRIFT_PERCENT / 100 + DRIFT_CONSTANT_MILLIS;
    }

    /** Takes {@code key} on a quorum of masters within the validity, or releases what it took and reports who holds it. */
    @Override
    public AcquireResult tryAcquire(String key, String owner, long leaseMillis) {
        RedisLockBackend.requireOwner(owner);
        if (leaseMillis <= 0) {
            throw new IllegalArgumentException("leaseMillis must be positive, got " + leaseMillis);
        }
        long start = System.nanoTime();
        long timeoutNanos = Math.min(operationTimeoutNanos, TimeUnit.MILLISECONDS.toNanos(leaseMillis));
        List<Answer<AcquireResult>> answers = onEveryNode(node -> node.tryAcquire(key, owner, leaseMillis), timeoutNanos);
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + 1;
        long validityMillis = leaseMillis - elapsedMillis - driftMillis(leaseMillis);

        List<RedisLockBackend> granted = new ArrayList<>();
        long maxToken = Long.MIN_VALUE;
        int held = 0;
        long minHeldTtl = Long.MAX_VALUE;
        for (int i = 0; i < answers.size(); i++) {
            AcquireResult result = answers.get(i).value;
            if (result instanceof AcquireResult.Acquired acquired) {
                granted.add(nodes.get(i));
                maxToken = Math.max(maxToken, acquired.fencingToken());
            } else if (result instanceof AcquireResult.Held holder) {
                held++;
                if (holder.remainingTtlMillis() >= 0) {
                    minHeldTtl = Math.min(minHeldTtl, holder.remainingTtlMillis());
                }
            }
        }
        if (granted.size() >= quorum && validityMillis > 0) {
            long token = maxToken;
            onNodes(granted, node -> {
                node.raiseFencingCounter(key, token);
                return Boolean.TRUE;
            }, operationTimeoutNanos);
            return new AcquireResult.Acquired(token);
        }
        // Also release where the answer was lost: the SET may have run there.
        List<RedisLockBackend> mayHoldIt = new ArrayList<>(granted);
        for (int i = 0; i < answers.size(); i++) {
            if (answers.get(i).failure != null) {
                mayHoldIt.add(nodes.get(i));
            }
        }
        onNodes(mayHoldIt, node -> node.release(key, owner, 0), operationTimeoutNanos);
        int answered = granted.size() + held;
        if (answered < quorum) {
            throw new LockBackendException("Redlock tryAcquire of key '" + key + "': only " + answered + " of "
                    + nodes.size() + " Redis masters answered, " + quorum + " needed", firstFailure(answers));
        }
        if (granted.size() >= quorum) {
            log.debug("Redlock acquire of key '{}' took {} ms, beyond the validity of a {} ms lease; released",
                    key, elapsedMillis, leaseMillis);
        }
        // A majority held by others: wait for their lease. A split vote or an expired validity: retry after a backoff.
        return new AcquireResult.Held(held >= quorum && minHeldTtl != Long.MAX_VALUE ? minHeldTtl : -1);
    }

    /** Releases on every master; {@code RELEASED} when a quorum still held the key for {@code owner}. */
    @Override
    public ReleaseResult release(String key, String owner, long fencingToken) {
        RedisLockBackend.requireOwner(owner);
        List<Answer<ReleaseResult>> answers = onEveryNode(node -> node.release(key, owner, fencingToken), operationTimeoutNanos);
        int released = 0;
        int answered = 0;
        for (Answer<ReleaseResult> answer : answers) {
            if (answer.value != null) {
                answered++;
                if (answer.value != ReleaseResult.NOT_OWNER) {
                    released++;
                }
            }
        }
        if (released >= quorum) {
            return ReleaseResult.RELEASED;
        }
        if (answered < quorum) {
            throw new LockBackendException("Redlock release of key '" + key + "': only " + answered + " of "
                    + nodes.size() + " Redis masters answered, " + quorum + " needed", firstFailure(answers));
        }
        return ReleaseResult.NOT_OWNER;
    }

    /** Renews on every master; an entry is {@code RENEWED} only when a quorum renewed it. */
    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        Objects.requireNonNull(batch, "batch");
        if (batch.isEmpty()) {
            return List.of();
        }
        List<Answer<List<RenewalResult>>> answers = onEveryNode(node -> node.renew(batch), operationTimeoutNanos);
        int answered = 0;
        for (Answer<List<RenewalResult>> answer : answers) {
            if (answer.value != null) {
                answered++;
            }
        }
        if (answered < quorum) {
            throw new LockBackendException("Redlock renew of " + batch.size() + " keys starting with '"
                    + batch.get(0).key() + "': only " + answered + " of " + nodes.size() + " Redis masters answered, "
                    + quorum + " needed", firstFailure(answers));
        }
        List<RenewalResult> results = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            int renewed = 0;
            int taken = 0;
            int expired = 0;
            for (Answer<List<RenewalResult>> answer : answers) {
                if (answer.value == null) {
                    continue;
                }
                switch (answer.value.get(i)) {
                    case RENEWED -> renewed++;
                    case TAKEN -> taken++;
                    case EXPIRED -> expired++;
                }
            }
            if (renewed >= quorum) {
                results.add(RenewalResult.RENEWED);
            } else {
                results.add(taken > expired ? RenewalResult.TAKEN : RenewalResult.EXPIRED);
            }
        }
        return results;
    }

    /** One group for all keys: every master is a standalone Redis. */
    @Override
    public Object renewalGroup(String key) {
        return "";
    }

    /** The configured renewal batch size, which every master accepts. */
    @Override
    public int maxRenewalBatchSize() {
        return nodes.get(0).maxRenewalBatchSize();
    }

    /** Notices from every master: a release seen on any of them wakes the waiter. */
    @Override
    public Optional<ReleaseNotices> releaseNotices() {
        return Optional.of(releaseNotices);
    }

    /** Pings every master in parallel; succeeds when a quorum answered and returns the whole fan-out's time in nanoseconds. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        List<Answer<Long>> answers = onEveryNode(RedisLockBackend::ping, operationTimeoutNanos);
        long answered = answers.stream().filter(answer -> answer.value != null).count();
        if (answered < quorum) {
            throw new LockBackendException("Redlock ping: only " + answered + " of " + nodes.size()
                    + " Redis masters answered, " + quorum + " needed", firstFailure(answers));
        }
        return System.nanoTime() - start;
    }

    /** Closes every master's notice subscriber and the fan-out threads; the clients stay open. */
    @Override
    public void close() {
        for (RedisLockBackend node : nodes) {
            node.close();
        }
        executor.shutdown();
    }

    private <T> List<Answer<T>> onEveryNode(Function<RedisLockBackend, T> call, long timeoutNanos) {
        return onNodes(nodes, call, timeoutNanos);
    }

    /** Runs {@code call} on each node in parallel; a node that fails or does not answer within the timeout gets a failed answer. */
    private <T> List<Answer<T>> onNodes(List<RedisLockBackend> targets, Function<RedisLockBackend, T> call,
                                        long timeoutNanos) {
        List<Future<T>> futures = new ArrayList<>(targets.size());
        for (RedisLockBackend node : targets) {
            futures.add(executor.submit(() -> call.apply(node)));
        }
        long deadline = System.nanoTime() + timeoutNanos;
        List<Answer<T>> answers = new ArrayList<>(targets.size());
        for (Future<T> future : futures) {
            try {
                answers.add(new Answer<>(future.get(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS), null));
            } catch (ExecutionException e) {
                Throwable cause = e.getCause();
                if (!(cause instanceof LockBackendException)) {
                    // A programming error (bad argument), not an unreachable master: do not count it as a vote.
                    futures.forEach(f -> f.cancel(false));
                    throw cause instanceof RuntimeException runtime ? runtime : new IllegalStateException(cause);
                }
                answers.add(new Answer<>(null, cause));
            } catch (TimeoutException e) {
                future.cancel(false);
                answers.add(new Answer<>(null, e));
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                futures.forEach(f -> f.cancel(false));
                throw new LockBackendException("Interrupted while waiting for the Redis masters", e);
            }
        }
        return answers;
    }

    private static Throwable firstFailure(List<? extends Answer<?>> answers) {
        for (Answer<?> answer : answers) {
            if (answer.failure != null) {
                return answer.failure;
            }
        }
        return null;
    }

    /** One master's answer, or why there is none. */
    private record Answer<T>(T value, Throwable failure) {
    }

    /** Configures a {@link RedlockBackend}; every setting is validated when set. */
    public static final class Builder {

        private final List<UnifiedJedis> masters;
        private String keyPrefix = RedisLockBackend.DEFAULT_KEY_PREFIX;
        private Duration fencingCounterTtl = RedisLockBackend.DEFAULT_FENCING_COUNTER_TTL;
        private int renewalBatchSize = RedisLockBackend.DEFAULT_RENEWAL_BATCH_SIZE;
        private Duration operationTimeout = DEFAULT_OPERATION_TIMEOUT;

        private Builder(List<? extends UnifiedJedis> masters) {
            if (masters == null || masters.size() < 3) {
                throw new IllegalArgumentException("Redlock needs at least 3 independent Redis masters, got "
                        + (masters == null ? "null" : masters.size()));
            }
            if (masters.stream().anyMatch(Objects::isNull)) {
                throw new IllegalArgumentException("Redlock masters must not contain null");
            }
            this.masters = List.copyOf(masters);
        }

        /** Prepended to every Redis key and channel on every master (default {@code "dlock:"}). */
        public Builder keyPrefix(String keyPrefix) {
            this.keyPrefix = RedisKeys.validatePrefix(keyPrefix);
            return this;
        }

        /** How long a fencing counter lives on each master after its last raise (default 24 h). */
        public Builder fencingCounterTtl(Duration fencingCounterTtl) {
            this.fencingCounterTtl = RedisLockBackend.validFencingCounterTtl(fencingCounterTtl);
            return this;
        }

        /** The most keys one renew call carries per master (default 100, at most 10,000). */
        public Builder renewalBatchSize(int renewalBatchSize) {
            this.renewalBatchSize = RedisLockBackend.validRenewalBatchSize(renewalBatchSize);
            return this;
        }

        /**
         * The longest one fan-out waits for the slowest master (default 5 s; an acquire waits at most
         * its lease). Give each client a socket timeout well below the lease, so a dead master costs
         * little of the validity.
         */
        public Builder operationTimeout(Duration operationTimeout) {
            if (operationTimeout == null || operationTimeout.toMillis() <= 0) {
                throw new IllegalArgumentException("operationTimeout must be at least 1 ms, got " + operationTimeout);
            }
            this.operationTimeout = operationTimeout;
            return this;
        }

        /** Creates the backend; it opens no connection until the first call or subscription. */
        public RedlockBackend build() {
            return new RedlockBackend(this);
        }
    }
}
