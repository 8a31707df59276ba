package dev.dlock.redis;

import java.net.ConnectException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.NoSuchElementException;
import java.util.Objects;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Executor;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;
import java.util.function.Predicate;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;

import dev.dlock.redis.RedlockFanOut.Answer;
import dev.dlock.redis.RedlockFanOut.View;

import redis.clients.jedis.UnifiedJedis;

/**
 * The Redlock algorithm over N independent Redis masters: a lock is held when a majority ({@code N/2+1}) of masters
 * took it within its validity. Each master runs the same scripts as a single-Redis {@link RedisLockBackend}; this class
 * only fans out and counts, each master on call threads of its own, so a stalled master ties up only its own.
 * Fewer than a quorum answering is a {@link LockBackendException}, never "held". Safety rests on bounded clock drift
 * and on the holder finishing within the validity: where correctness matters, use the fencing token.
 * Details (quorum, validity, token raise, releases, interrupts): docs/stores.md#redlock.
 */
public final class RedlockBackend implements LockBackend, LeaseExtension {

    private static final Logger log = LoggerFactory.getLogger(RedlockBackend.class);

    /** How long one fan-out waits for masters that could still change its outcome when nothing else is configured. */
    public static final Duration DEFAULT_OPERATION_TIMEOUT = Duration.ofSeconds(5);

    private static final long DRIFT_CONSTANT_MILLIS = 2;
    private static final int DRIFT_PERCENT = 1;
    private static final int THREADS_PER_NODE = 16;
    static final int QUEUED_CALLS_PER_NODE = 10_000;
    private static final long CLEANUP_FIRST_PAUSE_MILLIS = 50;
    private static final long CLEANUP_MAX_PAUSE_MILLIS = 1_000;
    /** Not acquired and no holder's lease to wait for: the engine backs off, or reports INTERRUPTED for an interrupted thread. */
    private static final AcquireResult NOT_ACQUIRED = new AcquireResult.Held(-1);

    private final List<Node> nodes;
    private final int quorum;
    private final int safeCountersNeeded;
    private final long operationTimeoutNanos;
    private final RedlockReleaseNotices releaseNotices;

    private RedlockBackend(Builder builder) {
        List<Node> created = new ArrayList<>(builder.masters.size());
        for (UnifiedJedis master : builder.masters) {
            created.add(new Node(created.size(), RedisLockBackend.builder(master)
                    .keyPrefix(builder.keyPrefix)
                    .fencingCounterTtl(builder.fencingCounterTtl)
                    .renewalBatchSize(builder.renewalBatchSize)
                    .cluster(false)
                    // Each node's token is needed at once, to raise the others' counters above the largest.
                    .fencingTokensOnRequest(false)
                    .build()));
        }
        this.nodes = List.copyOf(created);
        this.quorum = nodes.size() / 2 + 1;
        // Every quorum shares a master with any N - quorum + 1 masters.
        this.safeCountersNeeded = nodes.size() - quorum + 1;
        this.operationTimeoutNanos = builder.operationTimeout.toNanos();
        List<ReleaseNotices> perNode = new ArrayList<>();
        for (Node node : nodes) {
            perNode.add(node.store.capabilities().releaseNotices().orElseThrow());
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

    /**
     * Takes {@code key} on a quorum of masters within the validity with a fencing token that every
     * later quorum exceeds; otherwise releases it wherever it may have been taken and reports who
     * holds it. An interrupted thread gets {@code Held(-1)} at once with its interrupt flag kept.
     *
     * @throws LockBackendException when fewer than a quorum of masters answered, or when the token
     *         could not be made safe (see the class comment); the key is released in both cases
     */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        RedisLockBackend.requireOwner(owner);
        if (leaseMillis <= 0) {
            throw new IllegalArgumentException("leaseMillis must be positive, got " + leaseMillis);
        }
        if (Thread.currentThread().isInterrupted()) {
            return NOT_ACQUIRED;
        }
        long start = System.nanoTime();
        KeyOwner attempt = new KeyOwner(key, owner);
        RedlockFanOut<AcquireResult> votes = new RedlockFanOut<>(nodes, node -> node.tryAcquire(kind, key, owner, leaseMillis));
        for (int i = 0; i < nodes.size(); i++) {
            int target = i;
            CompletableFuture<Void> earlierRelease = nodes.get(i).pendingReleases.get(attempt);
            if (earlierRelease == null) {
                votes.start(target);
            } else {
                earlierRelease.whenComplete((ignored, failure) -> votes.start(target));
            }
        }
        boolean handedOut = false;
        boolean interrupted = false;
        try {
            long answerDeadline = start + Math.min(operationTimeoutNanos, TimeUnit.MILLISECONDS.toNanos(leaseMillis));
            View<AcquireResult> view = votes.await(this::acquireDecided, answerDeadline);
            rethrowUnexpected(view);
            List<Node> granted = new ArrayList<>();
            List<Long> tokens = new ArrayList<>();
            int held = 0;
            long minHeldTtl = Long.MAX_VALUE;
            for (int i = 0; i < nodes.size(); i++) {
                AcquireResult result = view.value(i);
                if (result instanceof AcquireResult.Acquired acquired) {
                    granted.add(nodes.get(i));
                    tokens.add(acquired.fencingToken());
                } else if (result instanceof AcquireResult.Held holder) {
                    held++;
                    if (holder.remainingTtlMillis() >= 0) {
                        minHeldTtl = Math.min(minHeldTtl, holder.remainingTtlMillis());
                    }
                }
            }
            if (granted.size() >= quorum && remainingValidityMillis(start, leaseMillis) > 0) {
                long token = tokens.stream().mapToLong(Long::longValue).max().orElseThrow();
                makeTokenSafe(key, token, granted, tokens, start, leaseMillis);
                long validityMillis = remainingValidityMillis(start, leaseMillis);
                if (validityMillis <= 0) {
                    log.debug("Redlock acquire of key '{}' took {} ms with the fencing raise, beyond the validity of a {} ms lease; released",
                            key, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), leaseMillis);
                    return NOT_ACQUIRED;
                }
                handedOut = true;
                return new AcquireResult.Acquired(token);
            }
            int answered = granted.size() + held;
            if (answered < quorum) {
                throw tooFewAnswered("tryAcquire of key '" + key + "'", answered, view);
            }
            if (granted.size() >= quorum) {
                log.debug("Redlock acquire of key '{}' took {} ms, beyond the validity of a {} ms lease; released",
                        key, TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start), leaseMillis);
            }
            // A majority held by others: wait for their lease. A split vote or an expired validity: retry after a backoff.
            return new AcquireResult.Held(held >= quorum && minHeldTtl != Long.MAX_VALUE ? minHeldTtl : -1);
        } catch (InterruptedException e) {
            interrupted = true;
            Thread.currentThread().interrupt();
            return NOT_ACQUIRED;
        } finally {
            if (handedOut) {
                followStragglers(votes, attempt, leaseMillis);
            } else {
                releaseAfterFailedAcquire(votes, attempt, leaseMillis, start, !interrupted);
            }
        }
    }

    /**
     * Raises the fencing counters of granting masters whose own token was lower, and waits until at
     * least {@link #safeCountersNeeded} masters hold a counter of at least {@code token}, no longer
     * than the validity lasts. Throws when that many cannot be reached; returns when they are, or
     * when the validity ran out first (the caller then checks the validity).
     */
    private void makeTokenSafe(String key, long token, List<Node> granted, List<Long> tokens, long start, long leaseMillis)
            throws InterruptedException {
        List<Node> behind = new ArrayList<>();
        for (int i = 0; i < granted.size(); i++) {
            if (tokens.get(i) < token) {
                behind.add(granted.get(i));
            }
        }
        if (behind.isEmpty()) {
            return;
        }
        int alreadySafe = granted.size() - behind.size();
        // Every master behind is raised, not only as many as safety needs: they run side by side, the wait ends once
        // enough answered, and every master raised is one more that issues a larger token next.
        RedlockFanOut<Boolean> raise = new RedlockFanOut<>(behind, node -> {
            node.raiseFencingCounter(key, token);
            return Boolean.TRUE;
        });
        raise.startAll();
        long validityDeadline = start + TimeUnit.MILLISECONDS.toNanos(leaseMillis - driftMillis(leaseMillis) - 1);
        long deadline = Math.min(System.nanoTime() + operationTimeoutNanos, validityDeadline);
        View<Boolean> raised;
        try {
            raised = raise.await(view -> view.unexpected() != null
                    || alreadySafe + view.answered() >= safeCountersNeeded
                    || alreadySafe + view.answered() + view.pending() < safeCountersNeeded, deadline);
        } finally {
            raise.close(null, false);
        }
        rethrowUnexpected(raised);
        int safe = alreadySafe + raised.answered();
        boolean impossible = safe + raised.pending() < safeCountersNeeded;
        if (safe < safeCountersNeeded && (impossible || remainingValidityMillis(start, leaseMillis) > 0)) {
            throw quorumFailure("Redlock tryAcquire of key '" + key + "': fencing token " + token
                    + " is safe (fencing counter at least as large) on only " + safe + " of " + nodes.size()
                    + " Redis masters, " + safeCountersNeeded + " needed so that every later quorum issues a larger"
                    + " token; the lock was released and the token not handed out", raised.firstFailure());
        }
    }

    /**
     * Releases on every master, answering once a quorum is decided: {@code RELEASED} when a quorum released the key,
     * {@code ALREADY_FREE} when a quorum no longer holds it for {@code owner} but fewer released it. A repeated release
     * may overtake the first one's call to a slow master and release it there; it is still a repeat, never the
     * release, as the SPI asks.
     */
    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        BackendCapabilities.requireExclusive(this, kind);
        RedisLockBackend.requireOwner(owner);
        movingAway(key, owner);
        View<ReleaseResult> view = onEveryNode(node -> node.release(kind, key, owner, fencingToken), this::releaseDecided, true);
        int released = view.count(result -> result == ReleaseResult.RELEASED);
        int freed = released + view.count(result -> result == ReleaseResult.ALREADY_FREE);
        if (freed >= quorum) {
            return released >= quorum ? ReleaseResult.RELEASED : ReleaseResult.ALREADY_FREE;
        }
        if (view.answered() < quorum) {
            throw tooFewAnswered("release of key '" + key + "'", view.answered(), view);
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
        View<List<RenewalResult>> view = onEveryNode(node -> node.renew(batch), answers -> renewDecided(answers, batch.size()));
        if (view.answered() < quorum) {
            throw tooFewAnswered("renew of " + batch.size() + " keys starting with '" + batch.get(0).key() + "'",
                    view.answered(), view);
        }
        List<RenewalResult> results = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            int entry = i;
            int renewed = view.count(answer -> answer.get(entry) == RenewalResult.RENEWED);
            int taken = view.count(answer -> answer.get(entry) == RenewalResult.TAKEN);
            int expired = view.count(answer -> answer.get(entry) == RenewalResult.EXPIRED);
            if (renewed >= quorum) {
                results.add(RenewalResult.RENEWED);
            } else {
                results.add(taken > expired ? RenewalResult.TAKEN : RenewalResult.EXPIRED);
            }
        }
        return results;
    }

    /**
     * Gives the lease to {@code retiredOwner} with {@code keepMillis} left on every master; {@code RENEWED} only when a
     * quorum did (each master's script rewrites the owner, so a late renewal of {@code owner} misses on every one).
     */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        RedisLockBackend.requireOwner(owner);
        movingAway(key, owner);
        View<RenewalResult> view = onEveryNode(node -> node.shorten(kind, key, owner, retiredOwner, keepMillis),
                this::shortenDecided, true);
        return newTermOnQuorum("shortening of key '" + key + "'", view);
    }

    /** {@code RENEWED} when a quorum gave the lease its new term; throws when fewer than a quorum answered. */
    private RenewalResult newTermOnQuorum(String what, View<RenewalResult> view) {
        if (view.answered() < quorum) {
            throw tooFewAnswered(what, view.answered(), view);
        }
        if (view.count(result -> result == RenewalResult.RENEWED) >= quorum) {
            return RenewalResult.RENEWED;
        }
        return view.count(result -> result == RenewalResult.TAKEN) > view.count(result -> result == RenewalResult.EXPIRED)
                ? RenewalResult.TAKEN : RenewalResult.EXPIRED;
    }

    /**
     * Gives the lease a new term of {@code leaseMillis} under {@code nextOwner} on every master; {@code RENEWED} only
     * when a quorum did (each master's script rewrites the owner, so no late command of {@code owner} finds it on any).
     * When fewer than a quorum did, the masters that did are released again for {@code nextOwner}, so that a minority
     * does not keep the key for nobody for the whole new term.
     */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        RedisLockBackend.requireOwner(owner);
        movingAway(key, owner);
        View<RenewalResult> view = onEveryNode(node -> node.extend(kind, key, owner, nextOwner, leaseMillis),
                this::shortenDecided);
        RenewalResult result = newTermOnQuorum("extension of key '" + key + "'", view);
        if (result != RenewalResult.RENEWED && view.count(answer -> answer == RenewalResult.RENEWED) > 0) {
            try {
                onEveryNode(node -> node.release(kind, key, nextOwner, AcquireResult.Acquired.TOKEN_ON_REQUEST),
                        this::releaseDecided, true);
            } catch (RuntimeException e) {
                log.debug("Redlock could not release key '{}' on the masters a failed extension reached; it expires there "
                        + "after {} ms: {}", key, leaseMillis, e.toString());
            }
        }
        return result;
    }


    /**
     * Exclusive locks, each token issued with its acquisition; renewals as one node for all keys (every master renews
     * every lease), in batches of the configured renewal batch size; notices from every master (a release seen on any
     * of them wakes the waiter); who holds a key on a quorum of masters, and an operator's forced release on every
     * master; extensions of a fixed lease on a quorum.
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withRenewalGrouping(nodes.get(0).store.capabilities().renewalGrouping().orElse(null))
                .withReleaseNotices(releaseNotices).withHolderInspection(new RedlockHolderInspection(this)).withLeaseExtension(this);
    }

    /** Pings every master in parallel; succeeds once a quorum answered and returns the time that took, in nanoseconds. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        View<Long> view = onEveryNode(RedisLockBackend::ping,
                answers -> answers.answered() >= quorum || answers.failed() > nodes.size() - quorum);
        if (view.answered() < quorum) {
            throw tooFewAnswered("ping", view.answered(), view);
        }
        return System.nanoTime() - start;
    }

    /**
     * Every master's answer to {@code call}, waiting for all of them for at most the operation timeout; masters that
     * failed or did not answer in time are left out.
     *
     * @throws LockBackendException when fewer than a quorum answered
     */
    <T> List<T> onEveryMaster(String operation, Function<RedisLockBackend, T> call) {
        View<T> view = onEveryNode(call, answers -> answers.pending() == 0);
        if (view.answered() < quorum) {
            throw tooFewAnswered(operation, view.answered(), view);
        }
        List<T> values = new ArrayList<>(nodes.size());
        for (Answer<T> answer : view.answers()) {
            if (answer != null && answer.failure() == null) {
                values.add(answer.value());
            }
        }
        return values;
    }

    /** Closes every master's notice subscriber and the call threads; the clients stay open. */
    @Override
    public void close() {
        for (Node node : nodes) {
            node.store.close();
            node.executor.shutdown();
        }
    }

    private boolean acquireDecided(View<AcquireResult> view) {
        int granted = view.count(result -> result instanceof AcquireResult.Acquired);
        return view.unexpected() != null || granted >= quorum
                || granted + view.pending() < quorum && quorumAnsweredOrUnreachable(view);
    }

    private boolean releaseDecided(View<ReleaseResult> view) {
        int freed = view.count(result -> result != ReleaseResult.NOT_OWNER);
        return view.unexpected() != null || freed >= quorum
                || freed + view.pending() < quorum && quorumAnsweredOrUnreachable(view);
    }

    private boolean renewDecided(View<List<RenewalResult>> view, int entries) {
        if (view.unexpected() != null) {
            return true;
        }
        if (!quorumAnsweredOrUnreachable(view)) {
            return false;
        }
        for (int i = 0; i < entries; i++) {
            int entry = i;
            int renewed = view.count(answer -> answer.get(entry) == RenewalResult.RENEWED);
            if (renewed < quorum && renewed + view.pending() >= quorum) {
                return false;
            }
        }
        return true;
    }

    private boolean shortenDecided(View<RenewalResult> view) {
        if (view.unexpected() != null) {
            return true;
        }
        int shortened = view.count(result -> result == RenewalResult.RENEWED);
        return quorumAnsweredOrUnreachable(view) && (shortened >= quorum || shortened + view.pending() < quorum);
    }

    /** True when a quorum answered, or so many failed that a quorum never will: either way the masters still busy cannot change the outcome's kind. */
    private boolean quorumAnsweredOrUnreachable(View<?> view) {
        return view.answered() >= quorum || view.failed() > nodes.size() - quorum;
    }

    /** Runs {@code call} on every master and waits, through interrupts, until {@code decided} or the operation timeout. */
    private <T> View<T> onEveryNode(Function<RedisLockBackend, T> call, Predicate<View<T>> decided) {
        return onEveryNode(call, decided, false);
    }

    /**
     * {@link #onEveryNode(Function, Predicate)}; with {@code runQueued}, a master whose call had not started when the
     * outcome was decided still runs it later, unheard. Releases and shortenings need that: skipped on a master that
     * holds the key, they would leave it there for the whole lease for an owner already gone (nothing else is sent for
     * that owner after them, so running late cannot undo a later command of it).
     */
    private <T> View<T> onEveryNode(Function<RedisLockBackend, T> call, Predicate<View<T>> decided, boolean runQueued) {
        RedlockFanOut<T> fanOut = new RedlockFanOut<>(nodes, call);
        fanOut.startAll();
        View<T> view;
        try {
            view = fanOut.awaitUninterruptibly(decided, System.nanoTime() + operationTimeoutNanos);
        } finally {
            fanOut.close(null, !runQueued);
        }
        rethrowUnexpected(view);
        return view;
    }

    /**
     * After a quorum grant, the masters whose acquire is still running: each is tracked until it answers. Its answer
     * joins the lock only when it comes before the holder sent a command that moves the key away from the owner
     * (release, shortening, extension): such a command may have reached that master first and found nothing, and the
     * acquire then holds the key there for an owner already gone, for a whole lease, keeping a quorum from everyone
     * once one more master fails. So a late answer after such a command, and a lost reply (not counted in the
     * quorum), release the owner on that master again. Masters whose acquire had not started never run it.
     *
     * <p>Why a release after the fact rather than ordering the holder's command behind the straggler: ordering would
     * make every release, shortening and extension wait for, or chain onto, that master's call, while the release
     * again needs no change to the fan-out and is as safe: it is owner-checked and owner tokens are unique per
     * acquisition, so it frees only the key this acquire took, never a later owner's (a shortening's retired owner or
     * an extension's next owner included), and it waits for no one. The holder's caller never waits for the straggler.
     */
    private void followStragglers(RedlockFanOut<AcquireResult> votes, KeyOwner attempt, long leaseMillis) {
        View<AcquireResult> last = votes.close(i -> {
            Node node = nodes.get(i);
            Straggler straggler = node.track(attempt);
            return answer -> {
                if (node.untrack(attempt, straggler) || answer.failure() != null) {
                    releaseStraggler(node, attempt, answer, leaseMillis);
                }
            };
        });
        for (int i = 0; i < nodes.size(); i++) {
            Answer<AcquireResult> answer = last.answers().get(i);
            if (answer != null && answer.failure() != null) {
                releaseStraggler(nodes.get(i), attempt, answer, leaseMillis);
            }
        }
    }

    /** Releases a straggling acquire's owner on {@code node} when its answer says it may hold the key there. */
    private void releaseStraggler(Node node, KeyOwner attempt, Answer<AcquireResult> answer, long leaseMillis) {
        // The key was taken there before this answer came (or, after a lost reply, no later than the second release
        // answer): a lease and one operation from now, it surely ended.
        long giveUpAt = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(leaseMillis) + operationTimeoutNanos;
        releaseIfItMayHold(node, attempt, answer, giveUpAt, node.registerRelease(attempt));
    }

    /** Tells every master that {@code owner} moves {@code key} away: its acquires still running there release it when they answer. */
    private void movingAway(String key, String owner) {
        KeyOwner held = new KeyOwner(key, owner);
        for (Node node : nodes) {
            node.movingAway(held);
        }
    }

    /**
     * Releases the key of a failed acquire on every master that may hold it; waits, when asked and
     * at most the operation timeout, for the masters that answered, never for those still busy.
     */
    private void releaseAfterFailedAcquire(RedlockFanOut<AcquireResult> votes, KeyOwner attempt, long leaseMillis, long start,
                                           boolean waitForAnswered) {
        try {
            // Past the lease plus one operation, the key has expired on every master that took it in time.
            long giveUpAt = start + TimeUnit.MILLISECONDS.toNanos(leaseMillis) + operationTimeoutNanos;
            View<AcquireResult> last = votes.close(i -> {
                Node node = nodes.get(i);
                CompletableFuture<Void> done = node.registerRelease(attempt);
                return answer -> releaseIfItMayHold(node, attempt, answer, giveUpAt, done);
            });
            List<CompletableFuture<Void>> answeredReleases = new ArrayList<>();
            for (int i = 0; i < nodes.size(); i++) {
                Answer<AcquireResult> answer = last.answers().get(i);
                if (answer != null && mayHoldIt(answer)) {
                    Node node = nodes.get(i);
                    CompletableFuture<Void> done = node.registerRelease(attempt);
                    releaseIfItMayHold(node, attempt, answer, giveUpAt, done);
                    if (answer.value() != null) {
                        answeredReleases.add(done);
                    }
                }
            }
            if (waitForAnswered && !answeredReleases.isEmpty()) {
                CompletableFuture.allOf(answeredReleases.toArray(CompletableFuture[]::new))
                        .get(operationTimeoutNanos, TimeUnit.NANOSECONDS);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (ExecutionException | TimeoutException | RuntimeException e) {
            log.debug("Redlock release of key '{}' after a failed acquire did not finish in time: {}", attempt.key(), e.toString());
        }
    }

    private void releaseIfItMayHold(Node node, KeyOwner attempt, Answer<AcquireResult> answer, long giveUpAt,
                                    CompletableFuture<Void> done) {
        if (!mayHoldIt(answer)) {
            done.complete(null);
            return;
        }
        // After a lost reply the acquire may still sit unread in the master's socket: only a release
        // sent after another release was answered surely runs after it.
        int answersNeeded = answer.value() != null ? 1 : 2;
        new Release(node, attempt, answersNeeded, giveUpAt, done).submit();
    }

    private static boolean mayHoldIt(Answer<AcquireResult> answer) {
        return answer.value() instanceof AcquireResult.Acquired || answer.failure() != null && mayHaveReached(answer.failure());
    }

    /**
     * False only when the failure proves the command never left this JVM (connection refused, no pooled
     * connection). Suppressed exceptions are searched too: they hold the client's exception of a store
     * failure, and the refused addresses of a Jedis connect.
     */
    private static boolean mayHaveReached(Throwable failure) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (cause instanceof ConnectException || cause instanceof NoSuchElementException) {
                return false;
            }
            for (Throwable suppressed : cause.getSuppressed()) {
                if (!mayHaveReached(suppressed)) {
                    return false;
                }
            }
        }
        return true;
    }

    /** "Only A of N answered (F failed, P not heard from), Q needed": P are masters still busy when the outcome was decided. */
    private LockBackendException tooFewAnswered(String operation, int answered, View<?> view) {
        List<String> missing = new ArrayList<>(2);
        if (view.failed() > 0) {
            missing.add(view.failed() + " failed");
        }
        if (view.pending() > 0) {
            missing.add(view.pending() + " not heard from");
        }
        return quorumFailure("Redlock " + operation + ": only " + answered + " of " + nodes.size()
                + " Redis masters answered" + (missing.isEmpty() ? "" : " (" + String.join(", ", missing) + ")")
                + ", " + quorum + " needed", view.firstFailure());
    }

    private static long remainingValidityMillis(long start, long leaseMillis) {
        long elapsedMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start) + 1;
        return leaseMillis - elapsedMillis - driftMillis(leaseMillis);
    }

    /** A failure of the quorum, caused by one master's store failure; any other failure of a master is named and kept as suppressed. */
    private static LockBackendException quorumFailure(String message, Throwable firstFailure) {
        return firstFailure == null || firstFailure instanceof LockBackendException
                ? new LockBackendException(message, (LockBackendException) firstFailure)
                : LockBackendException.storeFailure(message, firstFailure);
    }

    private static void rethrowUnexpected(View<?> view) {
        Throwable unexpected = view.unexpected();
        if (unexpected instanceof RuntimeException runtime) {
            // A programming error (bad argument, unexpected reply), not an unreachable master: not a vote.
            throw runtime;
        }
        if (unexpected instanceof Error error) {
            throw error;
        }
    }

    /** A key and the owner an acquire was for. */
    private record KeyOwner(String key, String owner) {
    }

    /**
     * One master: its single-Redis backend, its own call threads, the releases of failed or straggling acquires still
     * running on it, and the acquires still running on it for locks handed out at quorum.
     */
    static final class Node {

        final int index;
        final RedisLockBackend store;
        private final ThreadPoolExecutor executor;
        private final ConcurrentHashMap<KeyOwner, CompletableFuture<Void>> pendingReleases = new ConcurrentHashMap<>();
        /**
         * Each entry is one call running on a thread of this master, removed when it answers: at most
         * {@code THREADS_PER_NODE} entries. Changed only inside {@code compute} of its key, so an answer and a command
         * moving the key away are ordered: either the answer saw the mark, or the command is sent after the answer.
         */
        private final ConcurrentHashMap<KeyOwner, List<Straggler>> stragglers = new ConcurrentHashMap<>();

        Node(int index, RedisLockBackend store) {
            this.index = index;
            this.store = store;
            AtomicInteger threadNumber = new AtomicInteger();
            this.executor = new ThreadPoolExecutor(THREADS_PER_NODE, THREADS_PER_NODE, 60, TimeUnit.SECONDS,
                    new LinkedBlockingQueue<>(QUEUED_CALLS_PER_NODE), task -> {
                        Thread thread = new Thread(task, "dlock-redlock-" + index + "-" + threadNumber.incrementAndGet());
                        thread.setDaemon(true);
                        return thread;
                    });
            executor.allowCoreThreadTimeOut(true);
        }

        /** Runs {@code task} on this master's threads; false when closed or overloaded. */
        boolean submit(Runnable task) {
            try {
                executor.execute(task);
                return true;
            } catch (RejectedExecutionException e) {
                return false;
            }
        }

        /** Registers a release for {@code attempt} that the returned future completes; acquires for it wait until then. */
        CompletableFuture<Void> registerRelease(KeyOwner attempt) {
            CompletableFuture<Void> done = new CompletableFuture<>();
            CompletableFuture<Void> registered = pendingReleases.merge(attempt, done,
                    (earlier, added) -> CompletableFuture.allOf(earlier, added));
            registered.whenComplete((ignored, failure) -> pendingReleases.remove(attempt, registered));
            return done;
        }

        /** Tracks an acquire for {@code attempt} still running here after its lock was handed out. */
        Straggler track(KeyOwner attempt) {
            Straggler straggler = new Straggler();
            stragglers.compute(attempt, (ignored, running) -> {
                List<Straggler> all = running == null ? new ArrayList<>(1) : running;
                all.add(straggler);
                return all;
            });
            return straggler;
        }

        /** Stops tracking {@code straggler}, which answered; true when its owner moved the key away before. */
        boolean untrack(KeyOwner attempt, Straggler straggler) {
            boolean[] movedAway = new boolean[1];
            stragglers.computeIfPresent(attempt, (ignored, running) -> {
                running.remove(straggler);
                movedAway[0] = straggler.movedAway;
                return running.isEmpty() ? null : running;
            });
            return movedAway[0];
        }

        /** Marks the acquires still running here for {@code held}: a command moving the key away is about to be sent. */
        void movingAway(KeyOwner held) {
            if (!stragglers.isEmpty()) {
                stragglers.computeIfPresent(held, (ignored, running) -> {
                    running.forEach(straggler -> straggler.movedAway = true);
                    return running;
                });
            }
        }
    }

    /** An acquire still running on a master after its lock was handed out; fields guarded by its map's compute. */
    private static final class Straggler {

        private boolean movedAway;
    }

    /** Releases a failed or straggling acquire's key on one master until it answered often enough, or until the lease surely ended. */
    private static final class Release implements Runnable {

        private final Node node;
        private final KeyOwner attempt;
        private final int answersNeeded;
        private final long giveUpAt;
        private final CompletableFuture<Void> done;
        private int answers;
        private long pauseMillis = CLEANUP_FIRST_PAUSE_MILLIS;

        Release(Node node, KeyOwner attempt, int answersNeeded, long giveUpAt, CompletableFuture<Void> done) {
            this.node = node;
            this.attempt = attempt;
            this.answersNeeded = answersNeeded;
            this.giveUpAt = giveUpAt;
            this.done = done;
        }

        void submit() {
            if (!node.submit(this)) {
                log.debug("Redlock master {} is closed or overloaded; key '{}' expires there with its lease", node.index, attempt.key());
                done.complete(null);
            }
        }

        @Override
        public void run() {
            try {
                node.store.release(LockKind.EXCLUSIVE, attempt.key(), attempt.owner(), 0);
                if (++answers >= answersNeeded) {
                    done.complete(null);
                } else {
                    submit();
                }
            } catch (RuntimeException e) {
                if (System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(pauseMillis) - giveUpAt >= 0) {
                    log.warn("Redlock could not release key '{}' on master {} after a failed or late acquire ({}); it expires there with its lease",
                            attempt.key(), node.index, e.toString());
                    done.complete(null);
                    return;
                }
                Executor later = CompletableFuture.delayedExecutor(pauseMillis, TimeUnit.MILLISECONDS);
                pauseMillis = Math.min(pauseMillis * 2, CLEANUP_MAX_PAUSE_MILLIS);
                later.execute(this::submit);
            }
        }
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
         * The longest one fan-out waits for masters whose answers could still change its outcome
         * (default 5 s; an acquire waits at most its lease). Once the answers decide the outcome, no
         * call waits for the rest. Give each client a socket timeout well below the lease, so a dead
         * master costs little of the validity.
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
            JedisGeneration.requireSupported();
            return new RedlockBackend(this);
        }
    }
}
