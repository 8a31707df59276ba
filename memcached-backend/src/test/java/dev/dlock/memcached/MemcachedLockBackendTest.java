package dev.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.Concurrently;

/**
 * What the memcached store answers beyond the shared contract, call by call against a real memcached: leases
 * kept at least as long as asked although memcached counts whole seconds, the release answers that tell a
 * repeated release from a lost lease, renewal answers in order, no fencing tokens, keys of any shape, several
 * servers, and a paused or restarted server.
 */
class MemcachedLockBackendTest {

    @RegisterExtension
    static final MemcachedServerExtension memcached = new MemcachedServerExtension();

    private final List<AutoCloseable> opened = new ArrayList<>();
    private String key;

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = "store:" + test.getTestMethod().orElseThrow().getName() + ":" + UUID.randomUUID();
    }

    @AfterEach
    void closeAll() throws Exception {
        for (int i = opened.size() - 1; i >= 0; i--) {
            opened.get(i).close();
        }
    }

    private MemcachedLockBackend backend(String servers) {
        MemcachedLockBackend backend = MemcachedLockBackend.builder(servers).timeout(Duration.ofSeconds(1)).build();
        opened.add(backend);
        return backend;
    }

    private MemcachedLockBackend backend() {
        return backend(memcached.server().address());
    }

    private LockManager manager(LockBackend backend) {
        LockManager manager = LockManager.builder(backend).build();
        opened.add(manager);
        return manager;
    }

    private static String owner() {
        return "owner-" + UUID.randomUUID();
    }

    // ------------------------------------------------------------------ leases in whole seconds

    /**
     * memcached's clock ticks once a second, so an item of n seconds may go after n - 1: a lease of 1999 ms stored
     * as 2 s would be free after 1 to 2 s. Another owner polling every 10 ms must not get the key before 1999 ms.
     */
    @Test
    void aLeaseIsNeverGivenAwayBeforeItsEndAlthoughMemcachedCountsWholeSeconds() {
        MemcachedLockBackend store = backend();
        long leaseMillis = 1999;
        long sentAt = System.nanoTime();
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), leaseMillis)).isInstanceOf(AcquireResult.Acquired.class);
        String taker = owner();
        long deadline = sentAt + TimeUnit.SECONDS.toNanos(10);
        while (!(store.tryAcquire(LockKind.EXCLUSIVE, key, taker, 30_000) instanceof AcquireResult.Acquired)) {
            assertThat(System.nanoTime()).as("the lease ran out within 10 s").isLessThan(deadline);
            sleepMillis(10);
        }
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentAt)).as("ms until another owner got the key")
                .isGreaterThanOrEqualTo(leaseMillis);
    }

    /**
     * memcached's clock moves on a timer once a second, and a request read before a late tick sees the clock of the
     * tick before. Here the server is stopped across a tick and the lease of 1 s is sent just before it resumes: read
     * with the clock 1.6 s behind, a TTL of 2 s (the length rounded up, plus one) lived 0.4 s. On a loaded machine a
     * tick comes late without any SIGSTOP; the contract's lockAtLeastFor test saw such a key free 130 ms early.
     */
    @Test
    void aLeaseSentWhileTheServersClockTickIsLateStillLastsItsLength() throws Exception {
        try (MemcachedServer own = MemcachedServer.start()) {
            MemcachedLockBackend store = backend(own.address());
            long tick = aTickOf(store);
            long nextTick = tick + TimeUnit.SECONDS.toNanos((System.nanoTime() - tick) / 1_000_000_000L + 2);
            sleepUntil(nextTick - TimeUnit.MILLISECONDS.toNanos(150));
            own.pause();
            CompletableFuture<AcquireResult> acquired;
            long sentAt;
            try {
                sleepUntil(nextTick + TimeUnit.MILLISECONDS.toNanos(550));
                sentAt = System.nanoTime();
                acquired = CompletableFuture.supplyAsync(() -> store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 1_000));
                sleepUntil(nextTick + TimeUnit.MILLISECONDS.toNanos(600));
            } finally {
                own.resume();
            }
            assertThat(acquired.get(10, TimeUnit.SECONDS)).isInstanceOf(AcquireResult.Acquired.class);
            String taker = owner();
            long deadline = sentAt + TimeUnit.SECONDS.toNanos(10);
            while (!(store.tryAcquire(LockKind.EXCLUSIVE, key, taker, 30_000) instanceof AcquireResult.Acquired)) {
                assertThat(System.nanoTime()).as("the lease ran out within 10 s").isLessThan(deadline);
                sleepMillis(5);
            }
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - sentAt)).as("ms from the send until another owner got the key")
                    .isGreaterThanOrEqualTo(1_000);
        }
    }

    /** A moment of the server's clock tick: when a probe lock of the shortest lease stops being held. */
    private long aTickOf(MemcachedLockBackend store) {
        String probe = key + ":probe";
        store.tryAcquire(LockKind.EXCLUSIVE, probe, owner(), 1);
        String taker = owner();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!(store.tryAcquire(LockKind.EXCLUSIVE, probe, taker, 1) instanceof AcquireResult.Acquired)) {
            assertThat(System.nanoTime()).as("the probe ran out within 10 s").isLessThan(deadline);
            sleepMillis(1);
        }
        return System.nanoTime();
    }

    private static void sleepUntil(long nanoTime) {
        long left = nanoTime - System.nanoTime();
        if (left > 0) {
            sleepMillis(TimeUnit.NANOSECONDS.toMillis(left));
        }
    }

    @Test
    void aRefusedAttemptTellsTheHoldersRemainingLeaseRoundedUpToASecond() {
        MemcachedLockBackend store = backend();
        store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 10_000);
        AcquireResult refused = store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 10_000);
        assertThat(refused).isInstanceOfSatisfying(AcquireResult.Held.class, held -> {
            assertThat(held.remainingTtlMillis()).as("at most the stored 12 s").isPositive().isLessThanOrEqualTo(12_000L);
            assertThat(held.remainingTtlMillis() % 1000).as("whole seconds").isZero();
        });
    }

    @Test
    void aLeaseLongerThanMemcachedCanKeepIsRefusedSayingWhy() {
        assertThatThrownBy(() -> backend().tryAcquire(LockKind.EXCLUSIVE, key, owner(), Duration.ofDays(30).toMillis()))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("at most 29 days")
                .hasMessageContaining("memcached reads a longer TTL as a date");
    }

    // ------------------------------------------------------------------ owner checks

    @Test
    void aRepeatedAcquireByTheOwnerIsAcquiredAndOthersAreStillRefused() {
        MemcachedLockBackend store = backend();
        String owner = owner();
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, 5_000)).isInstanceOf(AcquireResult.Acquired.class);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, 20_000)).as("the same owner again (a lost reply)")
                .isInstanceOf(AcquireResult.Acquired.class);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 5_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).as("the repeated call set the lease to 20 s").isGreaterThan(15_000L));
    }

    @Test
    void releaseTellsARepeatedReleaseFromAnotherOwnersAcquisition() {
        MemcachedLockBackend store = backend();
        String first = owner();
        store.tryAcquire(LockKind.EXCLUSIVE, key, first, 30_000);
        assertThat(store.release(LockKind.EXCLUSIVE, key, owner(), 0)).as("a stranger's release").isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 30_000)).as("still held after it").isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, key, first, 0)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(store.release(LockKind.EXCLUSIVE, key, first, 0)).as("the same release again (a lost reply)").isEqualTo(ReleaseResult.ALREADY_FREE);

        String second = owner();
        store.tryAcquire(LockKind.EXCLUSIVE, key, second, 30_000);
        assertThat(store.release(LockKind.EXCLUSIVE, key, first, 0)).as("after another owner took the key").isEqualTo(ReleaseResult.NOT_OWNER);
        store.release(LockKind.EXCLUSIVE, key, second, 0);
        assertThat(store.release(LockKind.EXCLUSIVE, key, first, 0)).as("after another owner took and released the key").isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void renewalsAnswerEachLeaseInOrderAndTouchOnlyTheOwnersOwn() {
        MemcachedLockBackend store = backend();
        String owner = owner();
        String other = owner();
        List<String> keys = List.of(key + ":live", key + ":deleted", key + ":taken", key + ":live2", key + ":released");
        keys.forEach(k -> store.tryAcquire(LockKind.EXCLUSIVE, k, owner, 30_000));
        memcached.server().delete(new MemcachedKeys(MemcachedLockBackend.DEFAULT_KEY_PREFIX).lock(keys.get(1)));
        store.release(LockKind.EXCLUSIVE, keys.get(2), owner, 0);
        store.tryAcquire(LockKind.EXCLUSIVE, keys.get(2), other, 30_000);
        store.release(LockKind.EXCLUSIVE, keys.get(4), owner, 0);

        List<RenewalResult> results = store.renew(keys.stream().map(k -> new LeaseRenewal(k, owner, 60_000)).toList());

        assertThat(results).containsExactly(RenewalResult.RENEWED, RenewalResult.EXPIRED, RenewalResult.TAKEN,
                RenewalResult.RENEWED, RenewalResult.EXPIRED);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, keys.get(0), owner(), 1_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).as("renewed to 60 s").isGreaterThan(50_000L));
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, keys.get(2), owner(), 1_000)).isInstanceOfSatisfying(AcquireResult.Held.class,
                held -> assertThat(held.remainingTtlMillis()).as("the other owner's lease, untouched").isLessThanOrEqualTo(32_000L));
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, keys.get(4), owner(), 1_000)).as("a released key is not revived")
                .isInstanceOf(AcquireResult.Acquired.class);
    }

    // ------------------------------------------------------------------ what the store cannot do

    @Test
    void theStoreIssuesNoFencingTokensAndTakesExclusiveLocksOnly() {
        MemcachedLockBackend store = backend();
        assertThat(store.capabilities().fencing()).isFalse();
        assertThat(store.capabilities().modes()).isEqualTo(EnumSet.of(LockKind.Mode.EXCLUSIVE));
        try (LockHandle lock = manager(store).acquire(key, Duration.ZERO)) {
            assertThatThrownBy(lock::fencingToken).isInstanceOf(UnsupportedOperationException.class)
                    .hasMessageContaining("MemcachedLockBackend").hasMessageContaining("issues no fencing tokens");
            assertThat(lock.toString()).contains("no fencing token");
        }
    }

    /** A restart forgets every lock: another owner gets a held key, and the holder learns it at release. */
    @Test
    void aRestartForgetsHeldLocksAndTheHolderIsToldAtRelease() {
        try (MemcachedServer own = MemcachedServer.start()) {
            LockManager holder = manager(backend(own.address()));
            LockManager other = manager(backend(own.address()));
            LockHandle lock = holder.acquire(key, Duration.ZERO);
            own.restart();
            Optional<LockHandle> taken = other.tryAcquire(key);
            assertThat(taken).as("the key, taken by another owner after the restart").isPresent();
            assertThat(lock.isHeld()).as("the holder cannot know yet").isTrue();
            assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);
            taken.get().close();
        }
    }

    // ------------------------------------------------------------------ keys and servers

    @Test
    void keysOfAnyShapeAreLockedApartAndPrefixesSeparateApplications() {
        MemcachedLockBackend store = backend();
        String longKey = "k".repeat(1023);
        String[] distinct = {longKey + "a", longKey + "b", "order {42} with spaces, ünïcødé and }braces{", "tab\tand\nnewline"};
        String owner = owner();
        for (String k : distinct) {
            assertThat(store.tryAcquire(LockKind.EXCLUSIVE, k, owner, 30_000)).as("first acquisition of %s", k).isInstanceOf(AcquireResult.Acquired.class);
        }
        for (String k : distinct) {
            assertThat(store.tryAcquire(LockKind.EXCLUSIVE, k, owner(), 30_000)).as("another owner on %s", k).isInstanceOf(AcquireResult.Held.class);
        }
        MemcachedLockBackend otherApplication = MemcachedLockBackend.builder(memcached.server().address()).keyPrefix("billing:").build();
        opened.add(otherApplication);
        assertThat(otherApplication.tryAcquire(LockKind.EXCLUSIVE, distinct[0], owner(), 30_000)).as("the same key under another prefix")
                .isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void keysSpreadOverServersAndADownServerFailsOnlyItsOwnKeys() {
        try (MemcachedServer second = MemcachedServer.start()) {
            MemcachedLockBackend store = backend(memcached.server().address() + "," + second.address());
            MemcachedLockBackend reversed = backend(second.address() + ", " + memcached.server().address());
            MemcachedKeys keys = new MemcachedKeys(MemcachedLockBackend.DEFAULT_KEY_PREFIX);
            List<String> onSecond = new ArrayList<>();
            List<String> onFirst = new ArrayList<>();
            for (int i = 0; i < 40; i++) {
                String k = key + ":" + i;
                assertThat(reversed.nodeOf(k)).as("the server of %s, whatever the list's order", k).isEqualTo(store.nodeOf(k));
                assertThat(store.tryAcquire(LockKind.EXCLUSIVE, k, owner(), 30_000)).isInstanceOf(AcquireResult.Acquired.class);
                boolean onSecondServer = store.nodeOf(k).name().equals(second.address());
                (onSecondServer ? onSecond : onFirst).add(k);
                assertThat(onSecondServer ? second.has(keys.lock(k)) : memcached.server().has(keys.lock(k))).as("%s on its server", k).isTrue();
                assertThat(onSecondServer ? memcached.server().has(keys.lock(k)) : second.has(keys.lock(k))).as("%s on the other", k).isFalse();
            }
            assertThat(onFirst).as("keys on %s", memcached.server().address()).isNotEmpty();
            assertThat(onSecond).as("keys on %s", second.address()).isNotEmpty();

            second.kill();
            assertThat(store.tryAcquire(LockKind.EXCLUSIVE, onFirst.get(0), owner(), 30_000)).as("a key of the live server")
                    .isInstanceOf(AcquireResult.Held.class);
            assertThatThrownBy(() -> store.tryAcquire(LockKind.EXCLUSIVE, onSecond.get(0), owner(), 30_000)).isInstanceOf(LockBackendException.class)
                    .hasMessageContaining(second.address());
        }
    }

    // ------------------------------------------------------------------ faults

    /**
     * Connections kept from before a restart are all broken: the first call that finds one drops the kept ones and
     * goes through on a new connection, so the application sees no failed call.
     */
    @Test
    void connectionsKeptFromBeforeARestartCostNoFailedCall() throws Exception {
        try (MemcachedServer own = MemcachedServer.start()) {
            MemcachedLockBackend store = backend(own.address());
            // Four callers at once leave up to four kept connections.
            Concurrently.run(4, 5, Duration.ofSeconds(30), () -> store.release(LockKind.EXCLUSIVE, key, owner(), 0));
            own.restart();
            String owner = owner();
            assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner, 30_000)).isInstanceOf(AcquireResult.Acquired.class);
            assertThat(store.renew(List.of(new LeaseRenewal(key, owner, 30_000)))).containsExactly(RenewalResult.RENEWED);
            assertThat(store.release(LockKind.EXCLUSIVE, key, owner, 0)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    /** A server stopped with SIGSTOP keeps its connections and answers nothing: calls fail at the timeout, then work again. */
    @Test
    void aPausedServerFailsCallsAtTheTimeoutAndWorksOnceResumed() {
        try (MemcachedServer own = MemcachedServer.start()) {
            MemcachedLockBackend store = backend(own.address());
            String owner = owner();
            store.tryAcquire(LockKind.EXCLUSIVE, key, owner, 30_000);
            own.pause();
            try {
                assertThatThrownBy(() -> store.tryAcquire(LockKind.EXCLUSIVE, key, owner(), 30_000)).isInstanceOf(LockBackendException.class)
                        .hasMessageContaining(own.address()).hasMessageContaining("no complete reply within 1000 ms");
            } finally {
                own.resume();
            }
            assertThat(store.release(LockKind.EXCLUSIVE, key, owner, 0)).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    private static void sleepMillis(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new AssertionError("interrupted", e);
        }
    }
}
