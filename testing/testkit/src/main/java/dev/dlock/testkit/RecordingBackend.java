package dev.dlock.testkit;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.SessionLeases;

import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;

/**
 * Wraps a real backend and records what the engine asks of it (not a mock: every call goes to the
 * real store). Tests use it to count calls and to hold a renewal at a chosen moment. It forwards every
 * method of {@link LockBackend}, capabilities included, so that the engine on it behaves as on the store.
 */
public final class RecordingBackend implements LockBackend {

    private final LockBackend delegate;
    /** Acquire attempts sent. */
    public final AtomicInteger acquires = new AtomicInteger();
    /** Acquire attempts that found the key held. */
    public final AtomicInteger heldAnswers = new AtomicInteger();
    /** Owners whose acquire attempt found the key held at least once, in the order of their first such answer. */
    public final List<String> waitingOwners = new CopyOnWriteArrayList<>();
    /** Releases sent. */
    public final AtomicInteger releases = new AtomicInteger();
    /** Hand-offs sent: leases passed straight to the next holder in the JVM instead of a release. */
    public final AtomicInteger handOffs = new AtomicInteger();
    /** Every renewal entry sent, in order. */
    public final List<LeaseRenewal> renewals = new CopyOnWriteArrayList<>();
    private volatile Consumer<List<LeaseRenewal>> beforeRenew = batch -> { };
    private volatile BiConsumer<String, AcquireResult> afterAcquire = (owner, result) -> { };

    /** Wraps {@code delegate}. */
    public RecordingBackend(LockBackend delegate) {
        this.delegate = delegate;
    }

    /** Runs {@code hook} on the watchdog thread before each renewal batch is sent. */
    public void beforeRenew(Consumer<List<LeaseRenewal>> hook) {
        this.beforeRenew = hook;
    }

    /**
     * Runs {@code hook} with the owner and the store's answer on the acquiring thread, after the store answered and
     * before the engine sees it: a slow reply, or a fault at that moment.
     */
    public void afterAcquire(BiConsumer<String, AcquireResult> hook) {
        this.afterAcquire = hook;
    }

    /** The number of renewal entries sent for {@code key}. */
    public long renewalsOf(String key) {
        return renewals.stream().filter(r -> r.key().equals(key)).count();
    }

    @Override
    public AcquireResult tryAcquire(String key, String owner, long leaseMillis) {
        return tryAcquire(LockKind.EXCLUSIVE, key, owner, leaseMillis);
    }

    @Override
    public ReleaseResult release(String key, String owner, long fencingToken) {
        releases.incrementAndGet();
        return delegate.release(key, owner, fencingToken);
    }

    @Override
    public Set<LockKind.Mode> supportedModes() {
        return delegate.supportedModes();
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        acquires.incrementAndGet();
        AcquireResult result = delegate.tryAcquire(kind, key, owner, leaseMillis);
        if (result instanceof AcquireResult.Held) {
            heldAnswers.incrementAndGet();
            synchronized (waitingOwners) {
                if (!waitingOwners.contains(owner)) {
                    waitingOwners.add(owner);
                }
            }
        }
        afterAcquire.accept(owner, result);
        return result;
    }

    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        releases.incrementAndGet();
        return delegate.release(kind, key, owner, fencingToken);
    }

    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        delegate.withdraw(kind, key, owner);
    }

    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        beforeRenew.accept(batch);
        renewals.addAll(batch);
        return delegate.renew(batch);
    }

    @Override
    public Optional<RenewalGrouping> renewalGrouping() {
        return delegate.renewalGrouping();
    }

    @Override
    public Optional<ReleaseNotices> releaseNotices() {
        return delegate.releaseNotices();
    }

    @Override
    public Optional<SessionLeases> sessionLeases() {
        return delegate.sessionLeases();
    }

    @Override
    public Optional<HolderInspection> holderInspection() {
        return delegate.holderInspection();
    }

    @Override
    public void withdraw(String key, String owner) {
        delegate.withdraw(key, owner);
    }

    @Override
    public HandOffResult handOff(String key, String owner, long leaseMillis) {
        handOffs.incrementAndGet();
        return delegate.handOff(key, owner, leaseMillis);
    }

    @Override
    public boolean supportsHandOff() {
        return delegate.supportsHandOff();
    }

    @Override
    public boolean supportsFencing() {
        return delegate.supportsFencing();
    }

    @Override
    public long ping() {
        return delegate.ping();
    }

    @Override
    public void close() {
        delegate.close();
    }
}
