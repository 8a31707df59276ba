package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.OnFailure;
import dev.dlock.core.HeldLock;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.testkit.OverlapDetector;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;

import java.io.IOException;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicInteger;

/** The annotated service under test: one method per attribute and return type. */
public class LockedService {

    /** An order, the usual key source. */
    public record Order(long id, String region) {
    }

    private final OverlapDetector detector = new OverlapDetector();
    private final AtomicInteger runs = new AtomicInteger();
    private final LockManager lockManager;

    public LockedService(LockManager lockManager) {
        this.lockManager = lockManager;
    }

    /** How many locked bodies ran (a method, so that it reaches the target through the class proxy). */
    public AtomicInteger runs() {
        return runs;
    }

    /** The overlap detector of the exclusive sections. */
    public OverlapDetector detector() {
        return detector;
    }

    @DistributedLock(key = "#order.id")
    public String ship(Order order) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#p0")
    public String byP0(String id) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#a0")
    public String byA0(String id) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#root.methodName")
    public String byMethodName() {
        return LockContext.current().key();
    }

    @DistributedLock(key = "@keyBean.keyFor(#order)")
    public String byBean(Order order) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#order.region + '-' + #order.id")
    public String concatenated(Order order) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#id")
    public String byLong(Long id) {
        return LockContext.current().key();
    }

    @DistributedLock(key = "#id", name = "orders")
    public String named(String id) {
        return LockContext.current().lockName() + " " + LockContext.current().key();
    }

    @DistributedLock(key = "#id", waitTime = "0")
    public String tryOnce(String id) {
        runs.incrementAndGet();
        return "ran";
    }

    @DistributedLock(key = "#id", waitTime = "300ms")
    public String waitShort(String id) {
        return "ran";
    }

    @DistributedLock(key = "#id", waitTime = "${test.wait-time}")
    public String waitFromProperty(String id) {
        return "ran";
    }

    @DistributedLock(key = "#id", leaseTime = "2s")
    public HeldLock fixedLease(String id) {
        String key = LockContext.current().key();
        return lockManager.admin().heldLocks().stream().filter(h -> h.key().equals(key)).findFirst().orElseThrow();
    }

    @DistributedLock(key = "#id")
    public HeldLock watchdogLease(String id) {
        String key = LockContext.current().key();
        return lockManager.admin().heldLocks().stream().filter(h -> h.key().equals(key)).findFirst().orElseThrow();
    }

    @DistributedLock(key = "#id", condition = "#lock", waitTime = "0")
    public boolean conditional(String id, boolean lock) {
        return LockContext.find().isPresent();
    }

    @DistributedLock(key = "#id", abortIf = "@saleState.soldOut", waitTime = "30s", onFailure = OnFailure.SKIP)
    public String buy(String id) {
        return "bought";
    }

    @DistributedLock(key = "#id", abortIf = "@saleState.soldOut", waitTime = "0")
    public String buyOrThrow(String id) {
        return "bought";
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public Optional<String> skipOptional(String id) {
        runs.incrementAndGet();
        return Optional.of("ran");
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public List<String> skipList(String id) {
        runs.incrementAndGet();
        return List.of("ran");
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public Map<String, String> skipMap(String id) {
        runs.incrementAndGet();
        return Map.of("ran", "ran");
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public int skipInt(String id) {
        runs.incrementAndGet();
        return 42;
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public boolean skipBoolean(String id) {
        runs.incrementAndGet();
        return true;
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public String skipString(String id) {
        runs.incrementAndGet();
        return "ran";
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.FALLBACK, fallback = "plainFallback")
    public String withFallback(String id) {
        runs.incrementAndGet();
        return "ran";
    }

    public String plainFallback(String id) {
        return "fallback " + id;
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.FALLBACK, fallback = "fallbackWithCause")
    public String withFallbackCause(String id) {
        runs.incrementAndGet();
        return "ran";
    }

    String fallbackWithCause(String id, LockNotAcquiredException cause) {
        return "fallback " + cause.lockName() + " " + cause.key();
    }

    @DistributedLock(key = "#id")
    public void failChecked(String id) throws IOException {
        throw new IOException("checked " + id);
    }

    @DistributedLock(key = "#id")
    public String nullable(String id) {
        runs.incrementAndGet();
        return "ran";
    }

    @DistributedLock(key = "#order.id", waitTime = "10s")
    public void exclusive(Order order) {
        detector.enter();
        detector.incrementUnsafely();
        detector.exit();
    }

    @DistributedLock(keys = {"#first", "#second"}, waitTime = "10s")
    public void pair(String first, String second) {
        detector.enter();
        detector.incrementUnsafely();
        detector.exit();
    }

    @DistributedLock(keys = {"#first", "#second"}, waitTime = "200ms")
    public void pairQuick(String first, String second) {
        runs.incrementAndGet();
    }

    @DistributedLock(keys = {"#ids", "#extra"})
    public List<String> many(List<String> ids, String[] extra) {
        return LockContext.current().keys();
    }

    @DistributedLock(key = "#id")
    public long fencing(String id) {
        LockContext context = LockContext.current();
        return context.isHeld() ? context.fencingToken() : -1;
    }

    @DistributedLock(key = "#id")
    public CompletableFuture<String> async(String id, CompletableFuture<String> work) {
        return work;
    }

    @DistributedLock(key = "#id", waitTime = "0", onFailure = OnFailure.SKIP)
    public CompletableFuture<Optional<String>> asyncSkip(String id) {
        runs.incrementAndGet();
        return CompletableFuture.completedFuture(Optional.of("ran"));
    }

    @DistributedLock(key = "#id")
    public CompletableFuture<String> asyncThrows(String id) {
        throw new IllegalStateException("thrown before any future " + id);
    }

    @DistributedLock(key = "#id")
    public Mono<String> mono(String id, Mono<String> work) {
        return work;
    }

    @DistributedLock(key = "#id")
    public Flux<String> flux(String id, Flux<String> work) {
        return work;
    }
}
