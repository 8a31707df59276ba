package dev.dlock.testkit;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LocalHandOff;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.core.spi.TokensOnRequest;

import java.util.List;
import java.util.OptionalLong;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.function.Supplier;
import java.util.function.UnaryOperator;

/**
 * Wraps a real backend and records what the engine asks of it (not a mock: every call goes to the
 * real store). Tests use it to count calls, and to hold or break a renewal, a release, a hand-off or a fencing token's
 * issuance at a chosen moment as a slow or dropped connection would. It forwards every method of {@link LockBackend},
 * and offers what the store's capabilities offer, so that the engine on it behaves as on the store unless a test
 * {@linkplain #alterCapabilities changes} what it declares.
 *
 * <p>Its source folder is compiled by dlock-testkit (which publishes it) and by dlock-core's tests, which cannot
 * depend on the testkit: the testkit depends on dlock-core, and Maven refuses the cycle.
 */
public final class RecordingBackend implements LockBackend {

    /** One renewal entry sent, and when ({@link System#nanoTime()}). */
    public record SentRenewal(LeaseRenewal renewal, long sentAtNanos) {
    }

    /** One extension sent: the earlier term's owner, the new term's owner and lease, and when ({@link System#nanoTime()}). */
    public record SentExtension(String owner, String nextOwner, long leaseMillis, long sentAtNanos) {
    }

    private final LockBackend delegate;
    /** Acquire attempts sent. */
    public final AtomicInteger acquires = new AtomicInteger();
    /** Acquire attempts sent that asked the store to issue the fencing token with the acquisition. */
    public final AtomicInteger acquiresIssuingToken = new AtomicInteger();
    /** The owner of every acquire attempt sent, in order. */
    public final List<String> acquiringOwners = new CopyOnWriteArrayList<>();
    /** Acquire attempts that found the key held. */
    public final AtomicInteger heldAnswers = new AtomicInteger();
    /** Owners whose acquire attempt found the key held at least once, in the order of their first such answer. */
    public final List<String> waitingOwners = new CopyOnWriteArrayList<>();
    /** Releases sent. */
    public final AtomicInteger releases = new AtomicInteger();
    /** Hand-offs sent: leases passed straight to the next holder in the JVM instead of a release. */
    public final AtomicInteger handOffs = new AtomicInteger();
    /** Hand-offs sent that asked the store to issue the next holder's fencing token in the same call. */
    public final AtomicInteger handOffsIssuingToken = new AtomicInteger();
    /** "handOff" or "release" for every such call sent, in order. */
    public final List<String> passes = new CopyOnWriteArrayList<>();
    /** Fencing token issuances sent (for a store that issues tokens on request). */
    public final AtomicInteger issuances = new AtomicInteger();
    /** The owner of every withdrawal sent, in order. */
    public final List<String> withdrawals = new CopyOnWriteArrayList<>();
    /** Every renewal entry sent, in order. */
    public final List<LeaseRenewal> renewals = new CopyOnWriteArrayList<>();
    /** Every renewal entry sent with the time it was sent, in order. */
    public final List<SentRenewal> sentRenewals = new CopyOnWriteArrayList<>();
    /** Every shortening sent (a release before {@code lockAtLeastFor} ran out), as the retired owner's lease, in order. */
    public final List<SentRenewal> sentShortenings = new CopyOnWriteArrayList<>();
    /** Every extension sent (a fixed lease's new term), as the new owner's lease, with the earlier owner, in order. */
    public final List<SentExtension> sentExtensions = new CopyOnWriteArrayList<>();
    /** The size of every renewal batch sent, in order. */
    public final List<Integer> batchSizes = new CopyOnWriteArrayList<>();
    private volatile Consumer<List<LeaseRenewal>> beforeRenew = batch -> { };
    private volatile BiConsumer<String, AcquireResult> afterAcquire = (owner, result) -> { };
    private volatile Function<Supplier<ReleaseResult>, ReleaseResult> aroundRelease = Supplier::get;
    private volatile Function<Supplier<List<RenewalResult>>, List<RenewalResult>> aroundRenew = Supplier::get;
    private volatile Function<Supplier<HandOffResult>, HandOffResult> aroundHandOff = Supplier::get;
    private volatile Function<Supplier<OptionalLong>, OptionalLong> aroundIssue = Supplier::get;
    private volatile Function<Supplier<RenewalResult>, RenewalResult> aroundExtend = Supplier::get;
    private volatile Function<Supplier<RenewalResult>, RenewalResult> aroundShorten = Supplier::get;
    private volatile Function<Supplier<AcquireResult>, AcquireResult> aroundAcquire = Supplier::get;
    private volatile UnaryOperator<BackendCapabilities> capabilities = UnaryOperator.identity();
    private volatile Function<String, StoreNode> renewalGroups;

    /** Wraps {@code delegate}. */
    public RecordingBackend(LockBackend delegate) {
        this.delegate = delegate;
    }

    /** Runs {@code hook} on the watchdog thread before each renewal batch is sent; it may block or throw. */
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

    /**
     * Routes each acquisition through {@code around}, which gets the real call and decides whether, when and how often
     * it reaches the store: held while the test acts, or failed at the client and landed later (keep the supplier).
     */
    public void aroundAcquire(Function<Supplier<AcquireResult>, AcquireResult> around) {
        this.aroundAcquire = around;
    }

    /** Routes each release through {@code around}, which gets the real call and decides whether, and how, it reaches the store. */
    public void aroundRelease(Function<Supplier<ReleaseResult>, ReleaseResult> around) {
        this.aroundRelease = around;
    }

    /**
     * Routes each renewal batch through {@code around}, which gets the real call and decides whether, when and how
     * often it reaches the store: a call the client gave up on while its command still lands later, say.
     */
    public void aroundRenew(Function<Supplier<List<RenewalResult>>, List<RenewalResult>> around) {
        this.aroundRenew = around;
    }

    /** Routes each hand-off through {@code around}, which gets the real call and may hold it or act while it is in flight. */
    public void aroundHandOff(Function<Supplier<HandOffResult>, HandOffResult> around) {
        this.aroundHandOff = around;
    }

    /**
     * Routes each fencing token issuance through {@code around}, which gets the real call and may hold it, fail it (a
     * store failure: throw {@code LockBackendException}) or act while it is in flight.
     */
    public void aroundIssue(Function<Supplier<OptionalLong>, OptionalLong> around) {
        this.aroundIssue = around;
    }

    /**
     * Routes each extension (a fixed lease's new term) through {@code around}, which gets the real call and may hold it,
     * fail it (throw {@code LockBackendException}: the client gave up, the command may still land), or act while it is
     * in flight.
     */
    public void aroundExtend(Function<Supplier<RenewalResult>, RenewalResult> around) {
        this.aroundExtend = around;
    }

    /** Routes each shortening (a release before {@code lockAtLeastFor} ran out) through {@code around}, as {@link #aroundExtend}. */
    public void aroundShorten(Function<Supplier<RenewalResult>, RenewalResult> around) {
        this.aroundShorten = around;
    }

    /**
     * Declares the store's capabilities as {@code change} makes them from the store's own, for example without
     * hand-off so that a test counts plain releases; takes effect for managers built afterwards.
     */
    public void alterCapabilities(UnaryOperator<BackendCapabilities> change) {
        this.capabilities = change;
    }

    /** Presents the store as several nodes: {@code groups} maps a key to its node. */
    public void renewalGroups(Function<String, StoreNode> groups) {
        this.renewalGroups = groups;
    }

    /** The number of renewal entries sent for {@code key}. */
    public long renewalsOf(String key) {
        return renewals.stream().filter(r -> r.key().equals(key)).count();
    }

    /** The renewal entries sent for {@code key}, with the time each was sent, in order. */
    public List<SentRenewal> sentRenewalsOf(String key) {
        return sentRenewals.stream().filter(r -> r.renewal().key().equals(key)).toList();
    }

    /**
     * The store's capabilities, its hand-off, token issuance and lease extension recorded (and routed through
     * {@link #aroundHandOff}, {@link #aroundIssue} and {@link #aroundExtend}), its renewal grouping replaced by {@link #renewalGroups} when set, then as
     * {@link #alterCapabilities} changes them.
     */
    @Override
    public BackendCapabilities capabilities() {
        BackendCapabilities declared = delegate.capabilities();
        Function<String, StoreNode> groups = renewalGroups;
        BackendCapabilities recorded = declared
                .withLocalHandOff(declared.localHandOff().map(this::recordedHandOff).orElse(null))
                .withTokensOnRequest(declared.tokensOnRequest().map(this::recordedIssuance).orElse(null))
                .withLeaseExtension(declared.leaseExtension().map(this::recordedExtension).orElse(null))
                .withRenewalGrouping(groups == null ? declared.renewalGrouping().orElse(null) : new RenewalGrouping() {
                    @Override
                    public StoreNode nodeOf(String key) {
                        return groups.apply(key);
                    }

                    @Override
                    public int maxBatchSize() {
                        return Integer.MAX_VALUE;
                    }
                });
        return capabilities.apply(recorded);
    }

    private LocalHandOff recordedHandOff(LocalHandOff handOff) {
        return (key, owner, nextOwner, leaseMillis, issueToken) -> {
            handOffs.incrementAndGet();
            if (issueToken) {
                handOffsIssuingToken.incrementAndGet();
            }
            passes.add("handOff");
            return aroundHandOff.apply(() -> handOff.handOff(key, owner, nextOwner, leaseMillis, issueToken));
        };
    }

    private LeaseExtension recordedExtension(LeaseExtension extension) {
        return (kind, key, owner, nextOwner, leaseMillis) -> {
            sentExtensions.add(new SentExtension(owner, nextOwner, leaseMillis, System.nanoTime()));
            return aroundExtend.apply(() -> extension.extend(kind, key, owner, nextOwner, leaseMillis));
        };
    }

    private TokensOnRequest recordedIssuance(TokensOnRequest issuer) {
        return (kind, key, owner) -> {
            issuances.incrementAndGet();
            return aroundIssue.apply(() -> issuer.issueFencingToken(kind, key, owner));
        };
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        return tryAcquire(kind, key, owner, leaseMillis, false);
    }

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis, boolean issueToken) {
        acquires.incrementAndGet();
        if (issueToken) {
            acquiresIssuingToken.incrementAndGet();
        }
        acquiringOwners.add(owner);
        AcquireResult result = aroundAcquire.apply(() -> delegate.tryAcquire(kind, key, owner, leaseMillis, issueToken));
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
        passes.add("release");
        return aroundRelease.apply(() -> delegate.release(kind, key, owner, fencingToken));
    }

    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        withdrawals.add(owner);
        delegate.withdraw(kind, key, owner);
    }

    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        beforeRenew.accept(batch);
        batchSizes.add(batch.size());
        long now = System.nanoTime();
        for (LeaseRenewal renewal : batch) {
            sentRenewals.add(new SentRenewal(renewal, now));
        }
        renewals.addAll(batch);
        return aroundRenew.apply(() -> delegate.renew(batch));
    }

    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        sentShortenings.add(new SentRenewal(new LeaseRenewal(key, retiredOwner, keepMillis, kind), System.nanoTime()));
        return aroundShorten.apply(() -> delegate.shorten(kind, key, owner, retiredOwner, keepMillis));
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
