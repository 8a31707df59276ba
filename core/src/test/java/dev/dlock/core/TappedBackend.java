package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * Wraps a real store (not a mock: every call reaches it) and records what the engine asks of it, with
 * the time of each renewal. A test can hold a renewal or a release at a chosen moment, or make one fail
 * as a dropped connection would, to put the engine through faults a real store shows.
 */
final class TappedBackend implements LockBackend {

    /** One renewal entry sent, and when (System.nanoTime()). */
    record SentRenewal(LeaseRenewal renewal, long sentAtNanos) {
    }

    private final LockBackend store;
    final AtomicInteger acquires = new AtomicInteger();
    final AtomicInteger heldAnswers = new AtomicInteger();
    final AtomicInteger releases = new AtomicInteger();
    final List<SentRenewal> renewals = new CopyOnWriteArrayList<>();
    /** The owner of every withdrawal sent, in order. */
    final List<String> withdrawals = new CopyOnWriteArrayList<>();
    /** The owner of every acquire attempt sent, in order. */
    final List<String> acquiringOwners = new CopyOnWriteArrayList<>();
    /** What {@link #supportsHandOff()} answers (off unless a test turns it on, so that other tests count plain releases). */
    volatile boolean handOffs;
    /** "handOff" or "release" for every such call sent, in order. */
    final List<String> passes = new CopyOnWriteArrayList<>();
    /** What {@link #supportsFencing()} answers. */
    volatile boolean fencing = true;
    /** The size of every renewal batch sent, in order. */
    final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    private volatile Consumer<List<LeaseRenewal>> beforeRenew = batch -> { };
    private volatile Function<Supplier<ReleaseResult>, ReleaseResult> aroundRelease = Supplier::get;
    private volatile Function<Supplier<HandOffResult>, HandOffResult> aroundHandOff = Supplier::get;
    private volatile Function<String, StoreNode> renewalGroups;
    private volatile Consumer<AcquireResult> afterAcquire = result -> { };

    TappedBackend(LockBackend store) {
        this.store = store;
    }

    /** Runs {@code hook} after the store answered an acquire and before the engine sees it: a slow reply when it sleeps. */
    void afterAcquire(Consumer<AcquireResult> hook) {
        this.afterAcquire = hook;
    }

    /** Runs {@code hook} on the renewing thread before each batch goes to the store; it may block or throw. */
    void beforeRenew(Consumer<List<LeaseRenewal>> hook) {
        this.beforeRenew = hook;
    }

    /** Routes each release through {@code around}, which gets the real call and decides whether, and how, it reaches the store. */
    void aroundRelease(Function<Supplier<ReleaseResult>, ReleaseResult> around) {
        this.aroundRelease = around;
    }

    /** Routes each hand-off through {@code around}, which gets the real call and may hold it or act while it is in flight. */
    void aroundHandOff(Function<Supplier<HandOffResult>, HandOffResult> around) {
        this.aroundHandOff = around;
    }

    /** Presents the store as several nodes: {@code groups} maps a key to its node. */
    void renewalGroups(Function<String, StoreNode> groups) {
        this.renewalGroups = groups;
    }

    /** The renewal entries sent for {@code key}, in order. */
    List<SentRenewal> renewalsOf(String key) {
        return renewals.stream().filter(r -> r.renewal().key().equals(key)).toList();
    }

    @Override
    public AcquireResult tryAcquire(String key, String owner, long leaseMillis) {
        return tryAcquire(LockKind.EXCLUSIVE, key, owner, leaseMillis);
    }

    @Override
    public Set<LockKind.Mode> supportedModes() {
        return store.supportedModes();
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        acquires.incrementAndGet();
        acquiringOwners.add(owner);
        AcquireResult result = store.tryAcquire(kind, key, owner, leaseMillis);
        if (result instanceof AcquireResult.Held) {
            heldAnswers.incrementAndGet();
        }
        afterAcquire.accept(result);
        return result;
    }

    @Override
    public ReleaseResult release(String key, String owner, long fencingToken) {
        return release(LockKind.EXCLUSIVE, key, owner, fencingToken);
    }

    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        releases.incrementAndGet();
        passes.add("release");
        return aroundRelease.apply(() -> store.release(kind, key, owner, fencingToken));
    }

    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        beforeRenew.accept(batch);
        batchSizes.add(batch.size());
        long now = System.nanoTime();
        for (LeaseRenewal renewal : batch) {
            renewals.add(new SentRenewal(renewal, now));
        }
        return store.renew(batch);
    }

    @Override
    public Optional<RenewalGrouping> renewalGrouping() {
        Function<String, StoreNode> groups = renewalGroups;
        if (groups == null) {
            return store.renewalGrouping();
        }
        return Optional.of(new RenewalGrouping() {
            @Override
            public StoreNode nodeOf(String key) {
                return groups.apply(key);
            }

            @Override
            public int maxBatchSize() {
                return Integer.MAX_VALUE;
            }
        });
    }

    @Override
    public Optional<ReleaseNotices> releaseNotices() {
        return store.releaseNotices();
    }

    @Override
    public void withdraw(String key, String owner) {
        withdraw(LockKind.EXCLUSIVE, key, owner);
    }

    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        withdrawals.add(owner);
        store.withdraw(kind, key, owner);
    }

    @Override
    public HandOffResult handOff(String key, String owner, long leaseMillis) {
        passes.add("handOff");
        return aroundHandOff.apply(() -> store.handOff(key, owner, leaseMillis));
    }

    @Override
    public boolean supportsHandOff() {
        return handOffs && store.supportsHandOff();
    }

    @Override
    public boolean supportsFencing() {
        return fencing;
    }

    @Override
    public long ping() {
        return store.ping();
    }

    @Override
    public void close() {
        store.close();
    }
}
