package dev.dlock.testkit;

import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.PermitsMismatchException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatExceptionOfType;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The behaviour of the lock kinds beyond exclusive — read/write, permits, fair — through {@link LockManager},
 * against a real store. Each test runs only when the store supports the kind it needs
 * ({@link BackendCapabilities#modes()}); a store that supports none still passes the refusal test.
 * The detectors are sized for each kind: never a writer beside anyone, never more holders than permits,
 * acquisitions in arrival order.
 */
public abstract class LockKindsContractTest {

    /** Creates backends (each with its own client) connected to the store under test. */
    protected abstract BackendFactory factory();

    /** The connection string {@link #factory()} understands. */
    protected abstract String connection();

    /**
     * How long the store keeps a fair waiter's place (and a waiting writer's hold on new readers) without
     * hearing from it, as the factory's backends are configured.
     */
    protected abstract Duration fairWaiterTimeout();

    private final List<LockManager> managers = new ArrayList<>();
    private final List<LockBackend> backends = new ArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private ExecutorService runner;
    private String key;

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = "kinds:" + test.getTestMethod().map(m -> m.getName()).orElse("test") + ":" + UUID.randomUUID();
    }

    @AfterEach
    void closeManagers() {
        if (runner != null) {
            runner.shutdownNow();
            runner = null;
        }
        threads.forEach(Thread::interrupt);
        managers.forEach(LockManager::close);
        backends.forEach(b -> factory().dispose(b));
        managers.clear();
        backends.clear();
    }

    private RecordingBackend newBackend() {
        LockBackend backend = factory().create(connection());
        backends.add(backend);
        return new RecordingBackend(backend);
    }

    private LockManager manager(LockBackend backend) {
        LockManager manager = LockManager.builder(backend).leaseTime(Duration.ofSeconds(1)).build();
        managers.add(manager);
        return manager;
    }

    private LockManager manager() {
        return manager(newBackend());
    }

    private void assumeSupports(LockKind.Mode mode) {
        LockBackend backend = newBackend();
        assumeTrue(backend.capabilities().modes().contains(mode), backend + " does not take " + mode + " locks");
    }

    private LockRequest request(LockKind kind, Duration wait) {
        return LockRequest.builder(key).kind(kind).waitTime(wait).build();
    }

    private static LockHandle take(LockManager locks, LockRequest request) {
        return locks.acquire(request);
    }

    private Optional<LockHandle> tryNow(LockManager locks, LockKind kind) {
        return locks.tryAcquire(request(kind, Duration.ZERO));
    }

    /** {@link #tryNow} from a thread that holds nothing, so the answer comes from the store, not from re-entry. */
    private Optional<LockHandle> tryFromOtherThread(LockManager locks, LockKind kind) throws Exception {
        return CompletableFuture.supplyAsync(() -> tryNow(locks, kind), runner()).get(30, TimeUnit.SECONDS);
    }

    // ------------------------------------------------------------------ refusal

    @Test
    void aKindTheStoreCannotTakeIsRefusedNamingTheStore() {
        LockBackend backend = newBackend();
        LockManager locks = manager(backend);
        for (LockKind.Mode mode : LockKind.Mode.values()) {
            if (backend.capabilities().modes().contains(mode)) {
                continue;
            }
            LockKind kind = mode == LockKind.Mode.PERMITS ? LockKind.permits(2) : LockKind.of(mode);
            assertThatThrownBy(() -> locks.acquire(request(kind, Duration.ZERO)))
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining(mode.name()).hasMessageContaining("cannot take");
        }
        assertThat(backend.capabilities().modes()).contains(LockKind.Mode.EXCLUSIVE);
    }

    // ------------------------------------------------------------------ permits

    /**
     * Two applications that disagree on a semaphore's size: the second is refused, naming both numbers, while the first's
     * holders hold it (was: 5 holders at once, silently), and takes it with its own number once the key is free.
     */
    @Test
    void aDifferentNumberOfPermitsIsRefusedWhileTheKeyIsHeldAndTakesAFreeKey() throws Exception {
        assumeSupports(LockKind.Mode.PERMITS);
        LockManager threes = manager();
        LockManager fives = manager();
        LockHandle held = take(threes, request(LockKind.permits(3), Duration.ZERO));

        assertThatThrownBy(() -> take(fives, request(LockKind.permits(5), Duration.ofSeconds(1))))
                .isInstanceOfSatisfying(PermitsMismatchException.class, e -> {
                    assertThat(e.held()).isEqualTo(3);
                    assertThat(e.asked()).isEqualTo(5);
                })
                .hasMessageContaining("held with 3 permits").hasMessageContaining("asked for 5");
        assertThat(tryFromOtherThread(fives, LockKind.permits(3))).as("the same number, still taken").isPresent()
                .get().satisfies(LockHandle::close);

        held.close();
        try (LockHandle five = take(fives, request(LockKind.permits(5), Duration.ofSeconds(5)))) {
            assertThat(five.isHeld()).as("a free key takes the new number").isTrue();
            assertThatThrownBy(() -> take(threes, request(LockKind.permits(3), Duration.ZERO)))
                    .isInstanceOf(PermitsMismatchException.class).hasMessageContaining("held with 5 permits");
        }
    }

    @Test
    void threePermitsAreHeldAtOnceAndAFourthWaitsForOne() throws Exception {
        assumeSupports(LockKind.Mode.PERMITS);
        LockKind three = LockKind.permits(3);
        LockManager first = manager();
        LockManager second = manager();
        List<LockHandle> held = new ArrayList<>();
        held.add(take(first, request(three, Duration.ZERO)));
        held.add(take(second, request(three, Duration.ZERO)));
        // Another thread of the same JVM takes its own permit: a share is not re-entered across threads.
        held.add(CompletableFuture.supplyAsync(() -> take(first, request(three, Duration.ZERO))).get(10, TimeUnit.SECONDS));
        assertThat(held).allMatch(LockHandle::isHeld);
        assertThat(tryFromOtherThread(second, three)).as("a fourth permit").isEmpty();
        CompletableFuture<LockHandle> fourth = CompletableFuture.supplyAsync(() -> take(second, request(three, Duration.ofSeconds(20))));
        held.remove(0).close();
        LockHandle got = fourth.get(20, TimeUnit.SECONDS);
        assertThat(got.isHeld()).isTrue();
        got.close();
        for (LockHandle h : held) {
            h.close();
        }
    }

    @Test
    void permitHoldersNeverExceedTheirCount() throws Exception {
        assumeSupports(LockKind.Mode.PERMITS);
        LockKind three = LockKind.permits(3);
        LockManager first = manager();
        LockManager second = manager();
        AtomicInteger inside = new AtomicInteger();
        AtomicInteger most = new AtomicInteger();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        runTasks(8, 60, task -> {
            LockManager locks = task % 2 == 0 ? first : second;
            try (LockHandle permit = take(locks, request(three, Duration.ofSeconds(60)))) {
                int now = inside.incrementAndGet();
                most.accumulateAndGet(now, Math::max);
                tokens.add(permit.fencingToken());
                pauseMicros(500);
                inside.decrementAndGet();
            }
        });
        assertThat(most.get()).as("most permit holders at once").isLessThanOrEqualTo(3);
        assertThat(tokens).hasSize(8 * 60).doesNotHaveDuplicates();
    }

    @Test
    void aDeadHoldersPermitReturnsWhenItsLeaseEnds() throws Exception {
        assumeSupports(LockKind.Mode.PERMITS);
        LockKind one = LockKind.permits(1);
        LockManager dying = manager();
        dying.acquire(LockRequest.builder(key).kind(one).leaseTime(Duration.ofMillis(400)).waitTime(Duration.ZERO).build());
        // Its JVM dies: nobody releases or renews the permit (a close() would free it at once).
        LockManager survivor = manager();
        assertThat(tryNow(survivor, one)).isEmpty();
        try (LockHandle permit = survivor.acquire(request(one, Duration.ofSeconds(20)))) {
            assertThat(permit.isHeld()).isTrue();
        }
    }

    @Test
    void theWatchdogKeepsSharesAliveBeyondTheirLease() throws Exception {
        assumeSupports(LockKind.Mode.PERMITS);
        assumeSupports(LockKind.Mode.READ);
        LockManager holder = manager();
        LockManager other = manager();
        LockKind one = LockKind.permits(1);
        try (LockHandle permit = take(holder, request(one, Duration.ZERO));
             LockHandle read = take(holder, LockRequest.builder(key).kind(LockKind.READ).waitTime(Duration.ZERO).build())) {
            long end = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(3500);
            while (System.nanoTime() < end) {
                assertThat(tryNow(other, one)).as("the permit is still taken").isEmpty();
                assertThat(tryNow(other, LockKind.WRITE)).as("the read share still keeps writers out").isEmpty();
                pauseMicros(200_000);
            }
            assertThat(permit.isHeld()).isTrue();
            assertThat(read.isHeld()).isTrue();
        }
        assertThat(tryNow(other, one)).as("free after release").isPresent().get().satisfies(LockHandle::close);
    }

    // ------------------------------------------------------------------ read/write

    @Test
    void readersShareTheKeyAndAWriterWaitsForAllOfThem() throws Exception {
        assumeSupports(LockKind.Mode.READ);
        LockManager first = manager();
        LockManager second = manager();
        LockHandle r1 = take(first, request(LockKind.READ, Duration.ZERO));
        LockHandle r2 = take(second, request(LockKind.READ, Duration.ZERO));
        LockHandle r3 = CompletableFuture.supplyAsync(() -> take(first, request(LockKind.READ, Duration.ZERO))).get(10, TimeUnit.SECONDS);
        assertThat(tryFromOtherThread(second, LockKind.WRITE)).as("a writer beside readers").isEmpty();
        CompletableFuture<LockHandle> writer = CompletableFuture.supplyAsync(() -> take(second, request(LockKind.WRITE, Duration.ofSeconds(20))));
        r1.close();
        r2.close();
        assertThat(writer).as("one reader still holds").isNotDone();
        r3.close();
        LockHandle write = writer.get(20, TimeUnit.SECONDS);
        assertThat(tryNow(first, LockKind.READ)).as("a reader beside the writer").isEmpty();
        assertThat(tryNow(first, LockKind.WRITE)).as("a second writer").isEmpty();
        write.close();
        assertThat(tryNow(first, LockKind.READ)).isPresent().get().satisfies(LockHandle::close);
    }

    @Test
    void aWriterNeverHoldsBesideAnyoneElse() throws Exception {
        assumeSupports(LockKind.Mode.READ);
        LockManager first = manager();
        LockManager second = manager();
        AtomicInteger readers = new AtomicInteger();
        AtomicInteger writers = new AtomicInteger();
        AtomicInteger violations = new AtomicInteger();
        AtomicInteger mostReaders = new AtomicInteger();
        List<Long> tokens = Collections.synchronizedList(new ArrayList<>());
        runTasks(8, 60, task -> {
            LockManager locks = task % 2 == 0 ? first : second;
            boolean write = ThreadLocalRandom.current().nextInt(4) == 0;
            try (LockHandle lock = take(locks, request(write ? LockKind.WRITE : LockKind.READ, Duration.ofSeconds(60)))) {
                tokens.add(lock.fencingToken());
                if (write) {
                    if (writers.incrementAndGet() != 1 || readers.get() != 0) {
                        violations.incrementAndGet();
                    }
                    pauseMicros(300);
                    writers.decrementAndGet();
                } else {
                    mostReaders.accumulateAndGet(readers.incrementAndGet(), Math::max);
                    if (writers.get() != 0) {
                        violations.incrementAndGet();
                    }
                    pauseMicros(300);
                    readers.decrementAndGet();
                }
            }
        });
        assertThat(violations.get()).as("a writer beside another holder").isZero();
        assertThat(tokens).as("readers and writers share one token sequence").hasSize(8 * 60).doesNotHaveDuplicates();
    }

    @Test
    void aWaitingWriterHoldsBackNewReadersUntilItHadItsTurn() throws Exception {
        assumeSupports(LockKind.Mode.READ);
        LockManager first = manager();
        LockManager second = manager();
        LockHandle reader = take(first, request(LockKind.READ, Duration.ZERO));
        LockManager third = manager();
        CompletableFuture<LockHandle> writer = CompletableFuture.supplyAsync(() -> take(second, request(LockKind.WRITE, Duration.ofSeconds(30))));
        // Once the writer waits, new readers (of another JVM: the store decides) are turned away although only readers hold the key.
        awaitTrue(Duration.ofSeconds(10), () -> {
            Optional<LockHandle> late = tryNow(third, LockKind.READ);
            late.ifPresent(LockHandle::close);
            return late.isEmpty();
        });
        reader.close();
        LockHandle write = writer.get(20, TimeUnit.SECONDS);
        write.close();
        assertThat(tryNow(second, LockKind.READ)).as("readers are back once the writer is done").isPresent().get().satisfies(LockHandle::close);
    }

    @Test
    void aWriterThatDiedWhileWaitingHoldsReadersBackOnlyForTheWaiterTimeout() throws Exception {
        assumeSupports(LockKind.Mode.READ);
        LockManager readerSide = manager();
        RecordingBackend writerBackend = newBackend();
        LockHandle reader = take(readerSide, request(LockKind.READ, Duration.ZERO));
        // A writer's single attempt, then its JVM is gone: it never asks again and never withdraws.
        writerBackend.tryAcquire(LockKind.WRITE, key, "dead-writer-" + UUID.randomUUID(), 30_000);
        LockManager other = manager();
        assertThat(tryNow(other, LockKind.READ)).as("held back by the waiting writer").isEmpty();
        long start = System.nanoTime();
        try (LockHandle late = other.acquire(request(LockKind.READ, fairWaiterTimeout().multipliedBy(4)))) {
            assertThat(late.isHeld()).isTrue();
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(fairWaiterTimeout().plusSeconds(2));
        reader.close();
    }

    @Test
    void aReadInsideTheThreadsWriteReentersAndAWriteInsideAReadIsRefused() {
        assumeSupports(LockKind.Mode.READ);
        LockManager locks = manager();
        try (LockHandle write = take(locks, request(LockKind.WRITE, Duration.ZERO));
             LockHandle read = take(locks, request(LockKind.READ, Duration.ZERO))) {
            assertThat(read.fencingToken()).as("the read re-enters the write lease").isEqualTo(write.fencingToken());
        }
        try (LockHandle read = take(locks, request(LockKind.READ, Duration.ZERO))) {
            try (LockHandle again = take(locks, request(LockKind.READ, Duration.ZERO))) {
                assertThat(again.fencingToken()).isEqualTo(read.fencingToken());
            }
            assertThatThrownBy(() -> take(locks, request(LockKind.WRITE, Duration.ofSeconds(5))))
                    .isInstanceOf(IllegalStateException.class).hasMessageContaining("cannot be upgraded").hasMessageContaining(key);
            assertThat(read.isHeld()).isTrue();
        }
        assertThat(tryNow(locks, LockKind.WRITE)).as("nothing left held").isPresent().get().satisfies(LockHandle::close);
    }

    @Test
    void aDeadReadersShareFreesWhenItsLeaseEnds() {
        assumeSupports(LockKind.Mode.READ);
        LockManager dying = manager();
        dying.acquire(LockRequest.builder(key).kind(LockKind.READ).leaseTime(Duration.ofMillis(400)).waitTime(Duration.ZERO).build());
        // Its JVM dies: nobody releases the share (a close() would free it at once).
        LockManager survivor = manager();
        try (LockHandle write = survivor.acquire(request(LockKind.WRITE, Duration.ofSeconds(20)))) {
            assertThat(write.isHeld()).isTrue();
        }
    }

    // ------------------------------------------------------------------ fair

    @Test
    void fairWaitersOfThreeManagersAcquireInArrivalOrder() throws Exception {
        assumeSupports(LockKind.Mode.FAIR);
        List<RecordingBackend> stores = List.of(newBackend(), newBackend(), newBackend());
        List<LockManager> locks = stores.stream().map(this::manager).toList();
        LockHandle holder = take(locks.get(0), request(LockKind.FAIR, Duration.ZERO));
        List<String> order = new CopyOnWriteArrayList<>();
        List<CompletableFuture<Void>> waiters = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            int waiter = i;
            RecordingBackend store = stores.get(i % 3);
            int before = store.waitingOwners.size();
            waiters.add(CompletableFuture.runAsync(() -> {
                try (LockHandle ignored = take(locks.get(waiter % 3), request(LockKind.FAIR, Duration.ofSeconds(60)))) {
                    order.add("w" + waiter);
                }
            }, runner()));
            // The next waiter arrives only once this one has its place in the store's queue.
            awaitTrue(Duration.ofSeconds(10), () -> store.waitingOwners.size() > before);
        }
        holder.close();
        CompletableFuture.allOf(waiters.toArray(CompletableFuture[]::new)).get(60, TimeUnit.SECONDS);
        assertThat(order).containsExactly("w0", "w1", "w2", "w3", "w4", "w5");
    }

    @Test
    void deadFairWaitersCostTheLiveOnesAtMostOneWaiterTimeoutTogether() throws Exception {
        assumeSupports(LockKind.Mode.FAIR);
        RecordingBackend store = newBackend();
        LockManager locks = manager(store);
        LockHandle holder = take(locks, request(LockKind.FAIR, Duration.ZERO));
        // Three waiters of an application that was restarted (or killed): queued, never heard from again.
        for (int i = 0; i < 3; i++) {
            store.tryAcquire(LockKind.FAIR, key, "gone-" + i + "-" + UUID.randomUUID(), 30_000);
        }
        LockManager live = manager();
        CompletableFuture<Long> waited = CompletableFuture.supplyAsync(() -> {
            long start = System.nanoTime();
            try (LockHandle ignored = take(live, request(LockKind.FAIR, fairWaiterTimeout().multipliedBy(6)))) {
                return System.nanoTime() - start;
            }
        }, runner());
        holder.close();
        long nanos = waited.get(60, TimeUnit.SECONDS);
        assertThat(Duration.ofNanos(nanos)).as("three dead waiters ahead cost one timeout, not three")
                .isLessThan(fairWaiterTimeout().plus(fairWaiterTimeout().dividedBy(2)).plusSeconds(1));
    }

    @Test
    void aLiveFairWaiterKeepsItsPlaceHoweverLongItWaits() throws Exception {
        assumeSupports(LockKind.Mode.FAIR);
        RecordingBackend first = newBackend();
        RecordingBackend second = newBackend();
        LockManager holderSide = manager(first);
        LockManager waiterSide = manager(second);
        LockHandle holder = take(holderSide, request(LockKind.FAIR, Duration.ZERO));
        List<String> order = new CopyOnWriteArrayList<>();
        CompletableFuture<Void> early = CompletableFuture.runAsync(() -> {
            try (LockHandle ignored = take(waiterSide, request(LockKind.FAIR, Duration.ofMinutes(2)))) {
                order.add("early");
            }
        }, runner());
        awaitTrue(Duration.ofSeconds(10), () -> !second.waitingOwners.isEmpty());
        // Hold for three waiter timeouts: a waiter is dropped only when it stops asking, never for waiting long.
        pauseMicros(fairWaiterTimeout().multipliedBy(3).toNanos() / 1000);
        CompletableFuture<Void> late = CompletableFuture.runAsync(() -> {
            try (LockHandle ignored = take(holderSide, request(LockKind.FAIR, Duration.ofMinutes(2)))) {
                order.add("late");
            }
        }, runner());
        awaitTrue(Duration.ofSeconds(10), () -> !first.waitingOwners.isEmpty());
        holder.close();
        CompletableFuture.allOf(early, late).get(60, TimeUnit.SECONDS);
        assertThat(order).containsExactly("early", "late");
    }

    @Test
    void aFairWaiterThatGivesUpLeavesTheQueueAtOnce() throws Exception {
        assumeSupports(LockKind.Mode.FAIR);
        LockManager locks = manager();
        LockManager other = manager();
        LockHandle holder = take(locks, request(LockKind.FAIR, Duration.ZERO));
        assertThat(other.tryAcquire(request(LockKind.FAIR, Duration.ofMillis(200)))).as("timed out while held").isEmpty();
        holder.close();
        // The one that timed out withdrew: the next fair waiter does not wait for its place to go stale.
        long start = System.nanoTime();
        try (LockHandle next = take(other, request(LockKind.FAIR, fairWaiterTimeout()))) {
            assertThat(next.isHeld()).isTrue();
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isLessThan(fairWaiterTimeout().dividedBy(2));
    }

    @Test
    void fairAndExclusiveLocksOfOneKeyNeverOverlap() throws Exception {
        assumeSupports(LockKind.Mode.FAIR);
        LockManager first = manager();
        LockManager second = manager();
        OverlapDetector detector = new OverlapDetector();
        runTasks(8, 40, task -> {
            LockManager locks = task % 2 == 0 ? first : second;
            LockKind kind = task % 4 < 2 ? LockKind.FAIR : LockKind.EXCLUSIVE;
            try (LockHandle ignored = take(locks, request(kind, Duration.ofSeconds(60)))) {
                detector.enter();
                detector.incrementUnsafely();
                detector.exit();
            }
        });
        assertThat(detector.overlaps()).isZero();
        assertThat(detector.counter()).isEqualTo(8 * 40);
    }

    // ------------------------------------------------------------------ leases that ran out

    /**
     * A holder whose lease ran out, and whose key was then taken (and released) by another owner of the same lock,
     * is told it no longer owns the key: "already free" would pass for a repeated release and hide the lost lease.
     * Until someone took the key, its release is a harmless "already free".
     */
    @Test
    void aLeaseThatRanOutAndWasTakenByAnotherOwnerIsNotOwnerAtRelease() {
        assertOvertakenLeasesAreNotOwner(List.of(
                new LockKind[] {LockKind.EXCLUSIVE, LockKind.EXCLUSIVE}, new LockKind[] {LockKind.EXCLUSIVE, LockKind.FAIR},
                new LockKind[] {LockKind.FAIR, LockKind.FAIR}, new LockKind[] {LockKind.FAIR, LockKind.EXCLUSIVE},
                new LockKind[] {LockKind.WRITE, LockKind.WRITE}, new LockKind[] {LockKind.WRITE, LockKind.READ}));
    }

    /**
     * The same across the kinds of one key, which share one fencing token sequence: any acquisition of the key after
     * a lease ran out means that lease's release is not an owner's.
     */
    @Test
    void aLeaseThatRanOutAndWasFollowedByAnotherKindOfTheKeyIsNotOwnerAtRelease() {
        assertOvertakenLeasesAreNotOwner(List.of(
                new LockKind[] {LockKind.EXCLUSIVE, LockKind.WRITE}, new LockKind[] {LockKind.EXCLUSIVE, LockKind.READ},
                new LockKind[] {LockKind.EXCLUSIVE, LockKind.permits(2)}, new LockKind[] {LockKind.WRITE, LockKind.EXCLUSIVE},
                new LockKind[] {LockKind.WRITE, LockKind.FAIR}, new LockKind[] {LockKind.WRITE, LockKind.permits(2)}));
    }

    /**
     * Through the engine, for every kind: a holder whose fixed lease ran out and who was overtaken gets
     * {@link LockLostException} when it releases. A read lease or a permit is overtaken by whoever the store lets in
     * once it ran out: a writer, or the next permit holder.
     */
    @Test
    void everyKindsHolderOvertakenAfterItsFixedLeaseRanOutIsToldAtRelease() throws Exception {
        List<LockKind[]> pairs = List.of(new LockKind[] {LockKind.EXCLUSIVE, LockKind.EXCLUSIVE},
                new LockKind[] {LockKind.FAIR, LockKind.FAIR}, new LockKind[] {LockKind.WRITE, LockKind.WRITE},
                new LockKind[] {LockKind.READ, LockKind.WRITE}, new LockKind[] {LockKind.permits(1), LockKind.permits(1)});
        LockManager holderSide = manager();
        LockManager takerSide = manager();
        for (LockKind[] pair : supportedPairs(pairs)) {
            String pairKey = key + ":" + pair[0] + "<-" + pair[1];
            LockHandle holder = holderSide.acquire(LockRequest.builder(pairKey).kind(pair[0]).leaseTime(Duration.ofMillis(200))
                    .waitTime(Duration.ZERO).build());
            // Another thread: the taker waits in the store for the holder's lease to run out.
            CompletableFuture.runAsync(() -> takerSide.acquire(LockRequest.builder(pairKey).kind(pair[1])
                    .waitTime(Duration.ofSeconds(20)).build()).close(), runner()).get(30, TimeUnit.SECONDS);
            assertThatThrownBy(holder::close).as("%s holder overtaken by %s", pair[0], pair[1])
                    .isInstanceOf(LockLostException.class).hasMessageContaining(pairKey);
        }
    }

    /**
     * Through the engine, for a read lease and a permit, watched and fixed: the store loses the share while it is held
     * (here a forced release straight in the store, which this JVM's engine does not hear of, as a restart without
     * persistence or a failover to a replica that missed the write loses it), another manager (standing for another
     * JVM) takes the key, and the holder's release inside its lease tells it the lease was lost: LockLostException and
     * one onLeaseLost, never a clean release. The leases are long, so that no renewal finds the loss first.
     */
    @Test
    void aShareTheStoreLostWhileHeldIsReportedLostAtReleaseWatchedOrFixed() {
        List<LockKind[]> pairs = supportedPairs(List.of(new LockKind[] {LockKind.READ, LockKind.WRITE},
                new LockKind[] {LockKind.permits(1), LockKind.permits(1)}));
        assumeTrue(!pairs.isEmpty(), "the store takes no shared kind");
        RecordingBackend holderBackend = newBackend();
        // The holder's engine must not hear of the forced release, as it would not of a restart or a failover: a store
        // that tells forced releases (the in-memory one) would tell it otherwise.
        holderBackend.alterCapabilities(declared -> declared.withHolderInspection(null));
        List<String> lost = new CopyOnWriteArrayList<>();
        LockManager holderSide = LockManager.builder(holderBackend).leaseTime(Duration.ofSeconds(30)).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.add(lostKey);
            }
        }).build();
        managers.add(holderSide);
        LockBackend operator = newBackend();
        assumeTrue(operator.capabilities().holderInspection().isPresent(), "the store offers no forced release to lose a share with");
        LockManager takerSide = manager();
        for (LockKind[] pair : pairs) {
            for (boolean watched : new boolean[] {true, false}) {
                String pairKey = key + ":" + pair[0] + "<-" + pair[1] + (watched ? ":watched" : ":fixed");
                LockRequest.Builder asked = LockRequest.builder(pairKey).kind(pair[0]).waitTime(Duration.ZERO);
                LockHandle holder = holderSide.acquire(watched ? asked.build() : asked.leaseTime(Duration.ofSeconds(30)).build());
                assertThat(operator.capabilities().holderInspection().get().forceRelease(pair[0], pairKey)).as("%s: the share the store drops", pairKey)
                        .hasSize(1);
                LockHandle taker = takerSide.acquire(LockRequest.builder(pairKey).kind(pair[1]).waitTime(Duration.ZERO).build());
                assertThat(taker.isHeld()).as("%s: the other JVM's %s lock", pairKey, pair[1]).isTrue();
                assertThat(holder.isHeld()).as("%s: the holder, within its lease, unaware", pairKey).isTrue();
                assertThatExceptionOfType(LockLostException.class).as("%s: the release of the lost share", pairKey)
                        .isThrownBy(holder::close).withMessageContaining(pairKey);
                assertThat(lost).as("%s: onLeaseLost", pairKey).containsOnlyOnce(pairKey);
                taker.close();
            }
        }
    }

    /**
     * For each {holder kind, taker kind} pair the store takes: the holder's lease runs out, its release is "already
     * free" (or "not owner" from a store that recognises only its owner's own release); the taker takes and releases
     * the key; the holder's release is now "not owner".
     */
    private void assertOvertakenLeasesAreNotOwner(List<LockKind[]> pairs) {
        LockBackend store = newBackend();
        SoftAssertions softly = new SoftAssertions();
        for (LockKind[] pair : supportedPairs(pairs)) {
            LockKind held = pair[0];
            LockKind taker = pair[1];
            String pairKey = key + ":" + held + "<-" + taker;
            String holder = "holder-" + UUID.randomUUID();
            long token = takenInStore(store, held, pairKey, holder, 50);
            awaitRanOut(store, held, pairKey, holder);
            // Either: a store that tells by its token sequence that nobody took the key says "already free"; one that
            // recognises only its owner's own recorded release (Redis: tokens issued on request) says "not owner".
            softly.assertThat(store.release(held, pairKey, holder, token))
                    .as("%s lease ran out, nobody took the key since", held).isIn(ReleaseResult.ALREADY_FREE, ReleaseResult.NOT_OWNER);
            String other = "taker-" + UUID.randomUUID();
            long taken = takenInStore(store, taker, pairKey, other, 30_000);
            if (store.capabilities().fencing()) {
                assertThat(taken).as("the taker's token").isGreaterThan(token);
            }
            assertThat(store.release(taker, pairKey, other, taken)).isEqualTo(ReleaseResult.RELEASED);
            softly.assertThat(store.release(held, pairKey, holder, token))
                    .as("%s lease ran out, then a %s lock took and released the key", held, taker).isEqualTo(ReleaseResult.NOT_OWNER);
        }
        softly.assertAll();
    }

    /** The pairs whose both kinds the store takes. */
    private List<LockKind[]> supportedPairs(List<LockKind[]> pairs) {
        Set<LockKind.Mode> modes = newBackend().capabilities().modes();
        return pairs.stream().filter(pair -> modes.contains(pair[0].mode()) && modes.contains(pair[1].mode())).toList();
    }

    /**
     * Takes {@code lockKey} as {@code kind} for {@code owner} straight from the store, which must grant it; answers its
     * token, asked for at once when the store issues it on request.
     */
    private static long takenInStore(LockBackend store, LockKind kind, String lockKey, String owner, long leaseMillis) {
        AcquireResult answer = store.tryAcquire(kind, lockKey, owner, leaseMillis);
        assertThat(answer).as("%s takes %s as %s", owner, lockKey, kind).isInstanceOf(AcquireResult.Acquired.class);
        AcquireResult.Acquired taken = (AcquireResult.Acquired) answer;
        if (taken.tokenIssued() || !store.capabilities().fencing()) {
            return taken.fencingToken();
        }
        OptionalLong issued = store.capabilities().tokensOnRequest().orElseThrow().issueFencingToken(kind, lockKey, owner);
        assertThat(issued).as("the token %s asks for while it holds %s as %s", owner, lockKey, kind).isPresent();
        return issued.getAsLong();
    }

    /**
     * Waits until {@code owner}'s lease of {@code kind} ran out in the store, as its renewal finds: a renewal never
     * revives a lease that ran out, and while the lease lives, one of 1 ms only hastens its end. A store whose
     * expiry is coarser than that (memcached counts whole seconds, so a renewal always extends) overrides this
     * and watches the store itself.
     */
    protected void awaitRanOut(LockBackend store, LockKind kind, String lockKey, String owner) {
        awaitTrue(Duration.ofSeconds(10),
                () -> store.renew(List.of(new LeaseRenewal(lockKey, owner, 1, kind))).get(0) == RenewalResult.EXPIRED);
    }

    // ------------------------------------------------------------------ helpers

    /** A task of {@link #runTasks}: one critical section. */
    protected interface Section {
        void run(int task) throws Exception;
    }

    private void runTasks(int tasks, int iterations, Section section) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(tasks);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < tasks; t++) {
                int task = t;
                done.add(pool.submit(() -> {
                    for (int i = 0; i < iterations; i++) {
                        section.run(task);
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** Threads for waiters, stopped after the test. */
    private ExecutorService runner() {
        if (runner == null) {
            runner = Executors.newCachedThreadPool(work -> {
                Thread thread = new Thread(work, "kinds-" + key);
                thread.setDaemon(true);
                threads.add(thread);
                return thread;
            });
        }
        return runner;
    }

    private static void pauseMicros(long micros) {
        try {
            TimeUnit.MICROSECONDS.sleep(micros);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }

    /** Polls {@code condition} every 10 ms until it holds; fails after {@code timeout}. */
    private static void awaitTrue(Duration timeout, BooleanSupplier condition) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("condition not met within " + timeout);
            }
            pauseMicros(10_000);
        }
    }
}
