package dev.dlock.testkit;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The contract of {@link LockHandle#extend}, run against a real store: an extension keeps the key past the lease's
 * first end, and it is a new term of the lease that owns its store value. No command sent for an earlier term — a
 * retried acquisition, a renewal, a shortening, a release, an earlier extension — changes the extended lease however
 * late it lands, and an extension that lands late revives nothing and leaves a later holder's lease as it is. The
 * interleavings are forced with {@link RecordingBackend}'s hooks (a call held in flight, a reply lost while its command
 * lands later), never left to timing. "Another JVM" is a second {@link LockManager} with a backend of its own.
 *
 * <p>{@link LockBackendContractTest} runs it on its store as the nested class {@code Extension}.
 */
public abstract class LeaseExtensionContractTest {

    /** The lease the tests acquire: what an extension must outlast. */
    private static final Duration FIRST_LEASE = Duration.ofMillis(1_000);
    /** How long another JVM tries for the key: well past every end an earlier term could set. */
    private static final Duration PAST_EARLIER_ENDS = Duration.ofMillis(3_000);
    private static final Duration LONG = Duration.ofSeconds(30);

    /** Creates backends (each with its own client) connected to the store under test. */
    protected abstract BackendFactory factory();

    /** The connection string {@link #factory()} understands. */
    protected abstract String connection();

    private final List<LockManager> managers = new ArrayList<>();
    private final List<LockBackend> backends = new ArrayList<>();
    private final List<Thread> threads = new CopyOnWriteArrayList<>();
    private String key;

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = "extend:" + test.getTestMethod().map(m -> m.getName()).orElse("test") + ":" + UUID.randomUUID();
        assumeTrue(rawBackend().capabilities().leaseExtension().isPresent(), "the store offers no LeaseExtension");
    }

    @AfterEach
    void closeManagers() throws InterruptedException {
        for (Thread thread : threads) {
            thread.interrupt();
            thread.join(10_000);
        }
        managers.forEach(manager -> manager.close(Duration.ZERO));
        backends.forEach(backend -> factory().dispose(backend));
    }

    /** A fresh backend with its own client, disposed after the test. */
    private LockBackend rawBackend() {
        LockBackend backend = factory().create(connection());
        backends.add(backend);
        return backend;
    }

    private RecordingBackend newBackend() {
        return new RecordingBackend(rawBackend());
    }

    private LockManager manager(LockBackend backend) {
        LockManager manager = LockManager.builder(backend).build();
        managers.add(manager);
        return manager;
    }

    /** Another JVM: a manager over a backend of its own. */
    private LockManager anotherJvm() {
        return manager(newBackend());
    }

    private LockRequest fixed(Duration lease) {
        return LockRequest.builder(key).leaseTime(lease).waitTime(Duration.ZERO).build();
    }

    /** Fails if {@code jvm} takes the key within {@code patience}; what {@code why} names the reason it must not. */
    private void assertKeptFrom(LockManager jvm, Duration patience, String why) {
        Optional<LockHandle> overlapping = jvm.tryAcquire(LockRequest.builder(key).waitTime(patience).build());
        overlapping.ifPresent(LockHandle::close);
        assertThat(overlapping).as("another JVM within %s: %s", patience, why).isEmpty();
    }

    private void assertFreeFor(LockManager jvm, String why) {
        LockBackendContractTest.assertFree(jvm, key, why);
    }

    // ------------------------------------------------------------------ the extended lease

    @Test
    void anExtendedLeaseKeepsTheKeyPastItsFirstEndAndEachExtensionIsANewTerm() {
        RecordingBackend backend = newBackend();
        LockManager jvm = manager(backend);
        LockManager otherJvm = anotherJvm();
        LockHandle lock = jvm.acquire(fixed(FIRST_LEASE));
        lock.extend(LONG);
        lock.extend(LONG);
        assertKeptFrom(otherJvm, PAST_EARLIER_ENDS, "the extended lease runs " + LONG + ", the first one ran " + FIRST_LEASE);
        assertThat(lock.isHeld()).isTrue();
        assertThat(lock.state()).isEqualTo(LockState.HELD);
        assertThat(backend.sentExtensions).hasSize(2);
        RecordingBackend.SentExtension first = backend.sentExtensions.get(0);
        RecordingBackend.SentExtension second = backend.sentExtensions.get(1);
        assertThat(first.owner()).as("the first extension's earlier term").isEqualTo(backend.acquiringOwners.get(0));
        assertThat(second.owner()).as("the second extension's earlier term").isEqualTo(first.nextOwner());
        assertThat(List.of(first.owner(), first.nextOwner(), second.nextOwner())).as("one owner token per term")
                .doesNotHaveDuplicates();
        lock.close();
        assertFreeFor(otherJvm, "the release of the extended lease freed the key");
    }

    @Test
    void anExtensionAfterTheLeaseRanOutIsRefusedAsLostAndSendsNothing() {
        RecordingBackend backend = newBackend();
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(FIRST_LEASE));
        LockHandle next = anotherJvm().acquire(LockRequest.builder(key).leaseTime(LONG).waitTime(LONG).build());
        assertThatThrownBy(() -> lock.extend(LONG)).isInstanceOf(LockLostException.class).hasMessageContaining(key);
        assertThat(backend.sentExtensions).as("extensions sent for a lease that ran out").isEmpty();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThat(next.isHeld()).isTrue();
        assertKeptFrom(anotherJvm(), Duration.ZERO, "the next holder holds it");
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
        assertThat(next.isHeld()).as("the next holder, after the lost handle's release").isTrue();
        next.close();
    }

    /**
     * An extension is sent while the lease lives, but reaches the store only after the lease ran out and another JVM
     * took the key with a short lease. It must leave that lease as it is: the key frees itself when the next holder's
     * lease ends, not the extension's 30 s later.
     */
    @Test
    void anExtensionThatLandsAfterAnotherOwnerTookTheKeyChangesNothing() throws Exception {
        RecordingBackend backend = newBackend();
        CountDownLatch onItsWay = new CountDownLatch(1);
        CountDownLatch mayLand = new CountDownLatch(1);
        holdExtensions(backend, onItsWay, mayLand);
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(FIRST_LEASE));
        CompletableFuture<Throwable> extension = outcomeOf(() -> lock.extend(LONG));
        assertThat(onItsWay.await(10, TimeUnit.SECONDS)).as("the extension was sent").isTrue();
        Duration nextLease = Duration.ofMillis(2_000);
        LockHandle next = anotherJvm().acquire(LockRequest.builder(key).leaseTime(nextLease).waitTime(LONG).build());
        mayLand.countDown();
        assertThat(extension.get(20, TimeUnit.SECONDS)).as("the late extension's outcome").isInstanceOf(LockLostException.class);
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        // Its lease unchanged, the next holder's key frees itself after 2 s: long before the extension's 30 s.
        Optional<LockHandle> third = anotherJvm().tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(15)).build());
        third.ifPresent(LockHandle::close);
        assertThat(third).as("a third JVM once the next holder's %s lease ran out", nextLease).isPresent();
        assertThatThrownBy(next::close).as("the next holder's lease ran out").isInstanceOf(LockLostException.class);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    /**
     * Commands of the lease's earlier term reach the store after the extension, as a client that retried them or a slow
     * network delivers them: a retried acquisition, a renewal, a shortening, a release, another extension. None may
     * change the extended lease: each finds the key held by the new term's owner.
     */
    @Test
    void lateCommandsOfTheEarlierTermCannotChangeTheExtendedLease() {
        LockBackend store = rawBackend();
        RecordingBackend backend = new RecordingBackend(store);
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(FIRST_LEASE));
        String earlier = backend.acquiringOwners.get(0);
        lock.extend(LONG);
        long shortMillis = 100;
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, earlier, shortMillis)).as("a retried acquisition of the earlier term")
                .isInstanceOf(AcquireResult.Held.class);
        store.withdraw(LockKind.EXCLUSIVE, key, earlier);
        assertThat(store.renew(List.of(new LeaseRenewal(key, earlier, shortMillis))).get(0)).as("a renewal of the earlier term")
                .isNotEqualTo(RenewalResult.RENEWED);
        if (store.capabilities().sessionLeases().isEmpty()) {
            assertThat(store.shorten(LockKind.EXCLUSIVE, key, earlier, earlier + "-retired", shortMillis))
                    .as("a shortening of the earlier term").isNotEqualTo(RenewalResult.RENEWED);
        }
        assertThat(store.capabilities().leaseExtension().orElseThrow().extend(LockKind.EXCLUSIVE, key, earlier, earlier + "-other",
                shortMillis))
                .as("another extension of the earlier term").isNotEqualTo(RenewalResult.RENEWED);
        assertThat(store.release(LockKind.EXCLUSIVE, key, earlier, AcquireResult.Acquired.TOKEN_ON_REQUEST))
                .as("a release of the earlier term").isNotEqualTo(ReleaseResult.RELEASED);
        assertKeptFrom(anotherJvm(), PAST_EARLIER_ENDS, "the extended lease runs " + LONG + "; the earlier term's commands "
                + "asked for " + shortMillis + " ms, or to free the key");
        assertThat(lock.isHeld()).isTrue();
        lock.close();
        assertFreeFor(anotherJvm(), "the release of the extended lease freed the key");
    }

    /**
     * The reply of an extension is lost while its command is still on its way, and the store stays unreachable for the
     * engine's repeats: the outcome is unknown. The next extension settles it (sends it again) and starts a later term;
     * then the first command lands. It must not cut the later term short to the first extension's lease.
     */
    @Test
    void anEarlierExtensionLandingLateCannotChangeTheLaterTerm() throws Exception {
        RecordingBackend backend = newBackend();
        CountDownLatch firstMayLand = new CountDownLatch(1);
        CountDownLatch firstLanded = new CountDownLatch(1);
        AtomicInteger calls = new AtomicInteger();
        AtomicBoolean unreachable = new AtomicBoolean(true);
        backend.aroundExtend(call -> {
            if (calls.incrementAndGet() == 1) {
                start(() -> {
                    try {
                        awaitQuietly(firstMayLand);
                        call.get();
                    } finally {
                        firstLanded.countDown();
                    }
                });
                throw new LockBackendException("read timed out (the command is still on its way)", null);
            }
            if (unreachable.get()) {
                throw new LockBackendException("connection refused", null);
            }
            return call.get();
        });
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(Duration.ofSeconds(4)));
        Duration firstExtension = Duration.ofMillis(2_000);
        assertThatThrownBy(() -> lock.extend(firstExtension)).as("the first extension, its outcome unknown")
                .isInstanceOf(LockBackendException.class);
        assertThat(lock.isHeld()).as("held until the earlier of the two possible ends").isTrue();
        unreachable.set(false);
        lock.extend(LONG);
        firstMayLand.countDown();
        assertThat(firstLanded.await(10, TimeUnit.SECONDS)).as("the first extension's command landed").isTrue();
        assertKeptFrom(anotherJvm(), Duration.ofMillis(4_000), "the later term runs " + LONG + "; the first extension, "
                + "landing after it, asked for " + firstExtension);
        assertThat(lock.isHeld()).isTrue();
        lock.close();
        assertFreeFor(anotherJvm(), "the release of the later term freed the key");
    }

    // ------------------------------------------------------------------ racing the release, interrupts

    /**
     * The holder's release starts on another thread while an extension is in flight: it waits for the extension's
     * answer and releases the new term, so the release is clean and the key is free at once, not after the new term.
     */
    @Test
    void aReleaseRacingAnExtensionInFlightWaitsForItAndFreesTheNewTerm() throws Exception {
        RecordingBackend backend = newBackend();
        CountDownLatch onItsWay = new CountDownLatch(1);
        CountDownLatch mayLand = new CountDownLatch(1);
        holdExtensions(backend, onItsWay, mayLand);
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(Duration.ofSeconds(5)));
        CompletableFuture<Throwable> extension = outcomeOf(() -> lock.extend(LONG));
        assertThat(onItsWay.await(10, TimeUnit.SECONDS)).isTrue();
        CompletableFuture<Throwable> release = new CompletableFuture<>();
        Thread releasing = start(() -> {
            try {
                lock.close();
                release.complete(null);
            } catch (Throwable t) {
                release.complete(t);
            }
        });
        // The release is parked behind the extension (or, were it not, would have sent its release already).
        LockBackendContractTest.awaitTrue(Duration.ofSeconds(10),
                () -> releasing.getState() == Thread.State.WAITING || release.isDone());
        assertThat(backend.releases).as("releases sent while the extension is in flight").hasValue(0);
        mayLand.countDown();
        assertThat(extension.get(20, TimeUnit.SECONDS)).as("the extension's outcome").isNull();
        assertThat(release.get(20, TimeUnit.SECONDS)).as("the release's outcome").isNull();
        assertFreeFor(anotherJvm(), "the release freed the extended lease at once");
    }

    @Test
    void anExtensionOfAClosedHandleIsRefusedAndSendsNothing() {
        RecordingBackend backend = newBackend();
        LockHandle lock = manager(backend).acquire(fixed(Duration.ofSeconds(5)));
        lock.close();
        assertThatThrownBy(() -> lock.extend(LONG)).isInstanceOf(IllegalStateException.class).hasMessageContaining(key);
        assertThat(backend.sentExtensions).isEmpty();
        assertFreeFor(anotherJvm(), "nothing extended the released key");
    }

    /**
     * The extending thread is interrupted while it waits for the store's reply; the command lands, the client gives up.
     * The caller is told the outcome is unknown, keeps its interrupt, still holds the lease it had, and its release frees
     * whichever term the store holds: cleanly, and at once.
     */
    @Test
    void anInterruptedExtensionWhoseCommandLandedLeavesNothingHeldForNobody() throws Exception {
        RecordingBackend backend = newBackend();
        CountDownLatch onItsWay = new CountDownLatch(1);
        backend.aroundExtend(call -> {
            onItsWay.countDown();
            try {
                new CountDownLatch(1).await(20, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            call.get();
            throw new LockBackendException("interrupted while waiting for the reply", null);
        });
        LockManager jvm = manager(backend);
        LockHandle lock = jvm.acquire(fixed(Duration.ofSeconds(10)));
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        AtomicBoolean stillInterrupted = new AtomicBoolean();
        Thread extending = start(() -> {
            try {
                lock.extend(LONG);
                outcome.complete(null);
            } catch (Throwable t) {
                stillInterrupted.set(Thread.currentThread().isInterrupted());
                outcome.complete(t);
            }
        });
        assertThat(onItsWay.await(10, TimeUnit.SECONDS)).isTrue();
        extending.interrupt();
        assertThat(outcome.get(20, TimeUnit.SECONDS)).isInstanceOf(LockBackendException.class);
        assertThat(stillInterrupted).as("interrupt status kept").isTrue();
        assertThat(backend.sentExtensions).as("no repeat after the interrupt").hasSize(1);
        assertThat(lock.isHeld()).as("held within the lease it had").isTrue();
        lock.close();
        assertFreeFor(anotherJvm(), "the release freed the key, whichever term the store held");
    }

    // ------------------------------------------------------------------ tokens, lockAtLeastFor, kinds

    @Test
    void anExtensionKeepsTheHoldsFencingTokenAndTheNextHolderGetsALargerOne() {
        LockManager jvm = manager(newBackend());
        assumeTrue(jvm.capabilities().fencing(), "the store issues no fencing tokens");
        LockHandle lock = jvm.acquire(fixed(Duration.ofSeconds(5)));
        lock.extend(LONG);
        // A store that issues tokens on request issues it now, to the new term's owner.
        long token = lock.fencingToken();
        lock.extend(LONG);
        assertThat(lock.fencingToken()).as("the token after another extension").isEqualTo(token);
        lock.close();
        try (LockHandle next = anotherJvm().acquire(key, Duration.ofSeconds(5))) {
            assertThat(next.fencingToken()).as("the next holder's token").isGreaterThan(token);
        }
    }

    @Test
    void anExtensionWithLockAtLeastForKeepsTheKeyThatLongAfterAnEarlyRelease() {
        RecordingBackend backend = newBackend();
        assumeTrue(backend.capabilities().sessionLeases().map(SessionLeases::endsShortenedLeases).orElse(true),
                "the store keeps leases by its session and cannot time a shortened one: no lockAtLeastFor");
        LockManager jvm = manager(backend);
        LockManager otherJvm = anotherJvm();
        LockHandle lock = jvm.acquire(fixed(LONG));
        Duration atLeast = Duration.ofMillis(1_500);
        long extendedAt = System.nanoTime();
        lock.extend(LONG, atLeast);
        lock.close();
        assertThat(otherJvm.tryAcquire(key)).as("another JVM right after the early release").isEmpty();
        LockHandle next = otherJvm.acquire(key, Duration.ofSeconds(15));
        long freedAfterMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - extendedAt);
        next.close();
        assertThat(freedAfterMillis).as("ms from the extension until another JVM took the key")
                .isGreaterThanOrEqualTo(atLeast.toMillis() - 5).isLessThan(LONG.toMillis());
    }

    @Test
    void aWatchedLeaseIsKeptForAsLongAsItIsHeldAndNothingIsSent() {
        RecordingBackend backend = newBackend();
        LockManager jvm = manager(backend);
        try (LockHandle lock = jvm.acquire(key, Duration.ZERO)) {
            lock.extend(Duration.ofSeconds(1));
            lock.extend(Duration.ofSeconds(1), null);
            assertThat(lock.isHeld()).isTrue();
            assertThat(backend.sentExtensions).as("extensions sent for a watchdog-managed lease").isEmpty();
        }
        assertFreeFor(anotherJvm(), "the release freed the key");
    }

    @Test
    void aReadLeaseIsExtendedTooAndKeepsTheWriterOut() {
        RecordingBackend backend = newBackend();
        assumeTrue(backend.capabilities().supports(LockKind.READ), "the store takes no read locks");
        LockManager jvm = manager(backend);
        LockHandle read = jvm.acquire(LockRequest.builder(key).kind(LockKind.READ).leaseTime(FIRST_LEASE)
                .waitTime(Duration.ZERO).build());
        read.extend(LONG);
        LockManager writerJvm = anotherJvm();
        Optional<LockHandle> writer = writerJvm.tryAcquire(LockRequest.builder(key).kind(LockKind.WRITE)
                .waitTime(PAST_EARLIER_ENDS).build());
        writer.ifPresent(LockHandle::close);
        assertThat(writer).as("a writer within %s while the extended read lease runs", PAST_EARLIER_ENDS).isEmpty();
        assertThat(read.isHeld()).isTrue();
        read.close();
        Optional<LockHandle> afterwards = writerJvm.tryAcquire(LockRequest.builder(key).kind(LockKind.WRITE)
                .waitTime(Duration.ofSeconds(10)).build());
        assertThat(afterwards).as("a writer after the read lease's release").isPresent();
        afterwards.get().close();
    }

    // ------------------------------------------------------------------ helpers

    /** Holds every extension {@code backend} sends, once it is on its way, until {@code mayLand}; then it reaches the store. */
    private static void holdExtensions(RecordingBackend backend, CountDownLatch onItsWay, CountDownLatch mayLand) {
        backend.aroundExtend(call -> {
            onItsWay.countDown();
            awaitQuietly(mayLand);
            return call.get();
        });
    }

    /** Runs {@code work} on a thread of its own; completes with what it threw, or null. */
    private CompletableFuture<Throwable> outcomeOf(Runnable work) {
        CompletableFuture<Throwable> outcome = new CompletableFuture<>();
        start(() -> {
            try {
                work.run();
                outcome.complete(null);
            } catch (Throwable t) {
                outcome.complete(t);
            }
        });
        return outcome;
    }

    private Thread start(Runnable work) {
        Thread thread = new Thread(work, "extension-contract-" + key);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
        return thread;
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(30, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
