package dev.dlock.zookeeper;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.LockState;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.testkit.RecordingBackend;
import org.apache.curator.framework.CuratorFramework;
import org.apache.zookeeper.KeeperException;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** What the ZooKeeper store adds to the contract: the queue, zxid fencing, and a session lost under a holder. */
class ZooKeeperLockBackendTest {

    private static ZooKeeperTestServer zookeeper;
    private static CuratorFramework admin;

    private final List<CuratorFramework> clients = new ArrayList<>();
    private final List<ZooKeeperLockBackend> backends = new ArrayList<>();
    private final List<LockManager> managers = new ArrayList<>();
    private String key;

    @BeforeAll
    static void startZooKeeper() {
        zookeeper = ZooKeeperTestServer.start();
        admin = ZooKeeperBackendFactory.client(zookeeper.connectString(), 5);
    }

    @AfterAll
    static void stopZooKeeper() {
        admin.close();
        zookeeper.close();
    }

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = test.getTestMethod().orElseThrow().getName() + ":" + UUID.randomUUID();
    }

    @AfterEach
    void closeAll() {
        managers.forEach(LockManager::close);
        backends.forEach(ZooKeeperLockBackend::close);
        clients.forEach(CuratorFramework::close);
    }

    private CuratorFramework client() {
        CuratorFramework client = ZooKeeperBackendFactory.client(zookeeper.connectString(), 2);
        clients.add(client);
        return client;
    }

    private ZooKeeperLockBackend backend(CuratorFramework client) {
        ZooKeeperLockBackend backend = ZooKeeperLockBackend.builder(client).build();
        backends.add(backend);
        return backend;
    }

    private LockManager manager(ZooKeeperLockBackend backend, LockListener listener) {
        LockManager manager = LockManager.builder(backend).listener(listener).build();
        managers.add(manager);
        return manager;
    }

    private LockManager manager() {
        return manager(backend(client()), LockListener.NO_OP);
    }

    private String keyPath() {
        return ZooKeeperLockBackend.keyPath(ZooKeeperLockBackend.DEFAULT_BASE_PATH, key);
    }

    private List<String> queue() throws Exception {
        try {
            return admin.getChildren().forPath(keyPath());
        } catch (KeeperException.NoNodeException e) {
            // No key node (never created, or an empty container ZooKeeper reaped): nothing queued.
            return List.of();
        }
    }

    // ------------------------------------------------------------------ fencing

    @Test
    void fencingTokensKeepIncreasingAfterZooKeeperReapsTheEmptyKeyNode() throws Exception {
        ZooKeeperLockBackend backend = backend(client());
        List<Long> tokens = new ArrayList<>();
        List<String> sequences = new ArrayList<>();
        for (int round = 0; round < 2; round++) {
            for (int i = 0; i < 3; i++) {
                String owner = "owner-" + round + "-" + i;
                AcquireResult taken = backend.tryAcquire(LockKind.EXCLUSIVE, key, owner, SessionLeases.UNTIL_RELEASED);
                assertThat(taken).isInstanceOf(AcquireResult.Acquired.class);
                String node = queue().get(0);
                sequences.add(node.substring(node.length() - 10));
                long token = ((AcquireResult.Acquired) taken).fencingToken();
                tokens.add(token);
                assertThat(backend.release(LockKind.EXCLUSIVE, key, owner, token)).isEqualTo(ReleaseResult.RELEASED);
            }
            // The key node is an empty container now: the server's reaper (every 100 ms here) deletes it.
            await("the empty key node to be reaped", () -> admin.checkExists().forPath(keyPath()) == null);
        }
        // The reaper may also delete the node within a round, between a release and the next acquisition (a slow
        // machine): the sequence then restarts there too. After the wait above it has restarted at least once.
        assertThat(sequences.get(0)).isEqualTo("0000000000");
        assertThat(sequences.get(3)).as("sequence numbers restart with a new key node, so they cannot fence: %s", sequences)
                .isEqualTo("0000000000");
        for (int i = 1; i < tokens.size(); i++) {
            assertThat(tokens.get(i)).as("token %d of %s", i, tokens).isGreaterThan(tokens.get(i - 1));
        }
    }

    @Test
    void theSameOwnerAskingAgainKeepsTheKeyWithALargerTokenAndOnlyItsReleaseFreesIt() {
        ZooKeeperLockBackend backend = backend(client());
        ZooKeeperLockBackend other = backend(client());
        long first = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, key, "me", SessionLeases.UNTIL_RELEASED)).fencingToken();
        long again = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, key, "me", SessionLeases.UNTIL_RELEASED)).fencingToken();
        assertThat(again).isGreaterThan(first);
        assertThat(other.tryAcquire(LockKind.EXCLUSIVE, key, "you", SessionLeases.UNTIL_RELEASED)).isInstanceOf(AcquireResult.Held.class);
        assertThat(other.release(LockKind.EXCLUSIVE, key, "me", again)).as("another backend cannot release my node").isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(backend.release(LockKind.EXCLUSIVE, key, "stranger", again)).isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(backend.release(LockKind.EXCLUSIVE, key, "me", again)).isEqualTo(ReleaseResult.RELEASED);
        AcquireResult next = other.tryAcquire(LockKind.EXCLUSIVE, key, "you", SessionLeases.UNTIL_RELEASED);
        assertThat(next).isInstanceOfSatisfying(AcquireResult.Acquired.class, a -> assertThat(a.fencingToken()).isGreaterThan(again));
    }

    // ------------------------------------------------------------------ the queue

    /**
     * lockAtLeastFor on a store without expiry: a shortened term is kept for the retired owner and deleted by this
     * backend when it ends; commands for the earlier owner (a late release, an extension, a repeat of the shortening
     * with another retired owner) change nothing, and closing the backend frees the key even while its client (and
     * so the session) lives on.
     */
    @Test
    void aShortenedTermIsKeptUntilItsEndAndNoCommandOfTheEarlierOwnerChangesIt() throws Exception {
        ZooKeeperLockBackend holder = backend(client());
        ZooKeeperLockBackend other = backend(client());
        assertThat(holder.tryAcquire(LockKind.EXCLUSIVE, key, "owner-1", SessionLeases.UNTIL_RELEASED))
                .isInstanceOf(AcquireResult.Acquired.class);
        assertThat(holder.shorten(LockKind.EXCLUSIVE, key, "owner-1", "retired-1", 60_000)).isEqualTo(RenewalResult.RENEWED);
        assertThat(holder.shorten(LockKind.EXCLUSIVE, key, "owner-1", "retired-1", 60_000))
                .as("the same shortening repeated").isEqualTo(RenewalResult.RENEWED);
        assertThat(holder.release(LockKind.EXCLUSIVE, key, "owner-1", 0)).as("a late release of the earlier owner")
                .isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(holder.extend(LockKind.EXCLUSIVE, key, "owner-1", "owner-2", 1)).as("a late extension of the earlier owner")
                .isEqualTo(RenewalResult.EXPIRED);
        assertThat(holder.shorten(LockKind.EXCLUSIVE, key, "owner-1", "retired-2", 1)).as("a shortening to another retired owner")
                .isEqualTo(RenewalResult.EXPIRED);
        assertThat(other.tryAcquire(LockKind.EXCLUSIVE, key, "other", 10_000)).as("the key while kept")
                .isInstanceOf(AcquireResult.Held.class);
        other.withdraw(LockKind.EXCLUSIVE, key, "other");

        holder.close();
        long closedAt = System.nanoTime();
        AcquireResult next;
        do {
            next = other.tryAcquire(LockKind.EXCLUSIVE, key, "other-2", 10_000);
            if (next instanceof AcquireResult.Held) {
                other.withdraw(LockKind.EXCLUSIVE, key, "other-2");
                Thread.sleep(20);
            }
        } while (!(next instanceof AcquireResult.Acquired) && System.nanoTime() - closedAt < TimeUnit.SECONDS.toNanos(20));
        assertThat(next).as("the key after the holder's backend closed, its session still open").isInstanceOf(AcquireResult.Acquired.class);
        assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - closedAt)).as("ms until free, of a 60 s term").isLessThan(20_000);
    }

    @Test
    void aShortenedTermEndsWhenItsTimeRunsOut() throws Exception {
        ZooKeeperLockBackend holder = backend(client());
        ZooKeeperLockBackend other = backend(client());
        holder.tryAcquire(LockKind.EXCLUSIVE, key, "owner-1", SessionLeases.UNTIL_RELEASED);
        long shortenedAt = System.nanoTime();
        assertThat(holder.shorten(LockKind.EXCLUSIVE, key, "owner-1", "retired-1", 1_000)).isEqualTo(RenewalResult.RENEWED);
        LockManager waiter = LockManager.builder(other).build();
        managers.add(waiter);
        try (LockHandle next = waiter.acquire(key, Duration.ofSeconds(20))) {
            assertThat(TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - shortenedAt)).as("ms until another owner got it")
                    .isGreaterThanOrEqualTo(995);
            assertThat(next.isHeld()).isTrue();
        }
    }

    @Test
    void waitersOnDifferentBackendsAreServedInArrivalOrder() throws Exception {
        LockManager holder = manager();
        OverlapDetector detector = new OverlapDetector();
        List<String> order = new CopyOnWriteArrayList<>();
        LockHandle held = holder.acquire(key, Duration.ZERO);
        detector.enter();
        List<Thread> waiters = new ArrayList<>();
        for (String name : List.of("second", "third", "fourth")) {
            LockManager locks = manager();
            int queued = queue().size();
            Thread waiter = new Thread(() -> {
                try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(30))) {
                    detector.enter();
                    order.add(name);
                    detector.exit();
                }
            }, name);
            waiter.start();
            waiters.add(waiter);
            await(name + " to queue", () -> queue().size() == queued + 1);
        }
        detector.exit();
        held.close();
        for (Thread waiter : waiters) {
            waiter.join(30_000);
        }
        assertThat(order).containsExactly("second", "third", "fourth");
        assertThat(detector.overlaps()).isZero();
        await("the queue to empty", () -> queue().isEmpty());
    }

    @Test
    void aWaiterThatTimesOutOrIsInterruptedLeavesNoNodeBehind() throws Exception {
        LockManager holder = manager();
        LockManager waiter = manager();
        try (LockHandle held = holder.acquire(key, Duration.ZERO)) {
            assertThat(waiter.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofMillis(300)).build())).isEmpty();
            await("the timed-out waiter's node to go", () -> queue().size() == 1);

            CountDownLatch ended = new CountDownLatch(1);
            Thread interrupted = new Thread(() -> {
                waiter.tryAcquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).build());
                ended.countDown();
            });
            interrupted.start();
            await("the second waiter to queue", () -> queue().size() == 2);
            interrupted.interrupt();
            assertThat(ended.await(10, TimeUnit.SECONDS)).isTrue();
            await("the interrupted waiter's node to go", () -> queue().size() == 1);
            assertThat(held.isHeld()).isTrue();
        }
        try (LockHandle next = manager().acquire(key, Duration.ZERO)) {
            assertThat(next.isHeld()).as("nothing queued ahead once the holder released").isTrue();
        }
    }

    // ------------------------------------------------------------------ sessions

    @Test
    void anExpiredSessionReachesTheHolderAsALostLeaseAndFreesTheKey() throws Exception {
        CuratorFramework client = client();
        List<String> lost = new CopyOnWriteArrayList<>();
        LockManager locks = manager(backend(client), new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.add(reason);
            }
        });
        LockManager other = manager();
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        long token = lock.fencingToken();
        ZooKeeperTestServer.expireSession(client, zookeeper.connectString());

        await("the holder to be told", () -> !lost.isEmpty());
        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThat(lost.get(0)).containsAnyOf(ZooKeeperLockBackend.NODE_GONE, ZooKeeperLockBackend.SUSPENDED,
                ZooKeeperLockBackend.SESSION_LOST);
        try (LockHandle next = other.acquire(key, Duration.ofSeconds(10))) {
            assertThat(next.fencingToken()).isGreaterThan(token);
        }
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
        try (LockHandle again = locks.acquire(key, Duration.ofSeconds(10))) {
            assertThat(again.isHeld()).as("the backend works on its new session").isTrue();
        }
    }

    @Test
    void aSessionLostRightAfterTheGrantReachesTheHolderAsALostLease() throws Exception {
        CuratorFramework client = client();
        ZooKeeperLockBackend backend = backend(client);
        List<String> reported = new CopyOnWriteArrayList<>();
        // The session expires between the store's grant and the engine's record of it (a GC pause of the acquiring
        // thread): the store reports the loss to the manager before the acquisition returns.
        RecordingBackend grantThenSessionLoss = new RecordingBackend(backend);
        grantThenSessionLoss.afterAcquire((owner, answer) -> {
            if (answer instanceof AcquireResult.Acquired) {
                try {
                    ZooKeeperTestServer.expireSession(client, zookeeper.connectString());
                    await("the store to report the lease lost", () -> reported.contains(owner));
                } catch (Exception e) {
                    throw new AssertionError(e);
                }
            }
        });
        List<String> lost = new CopyOnWriteArrayList<>();
        LockManager locks = LockManager.builder(grantThenSessionLoss).listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                lost.add(reason);
            }
        }).build();
        managers.add(locks);
        // Added after the manager's listener, so it hears of each report once the manager has.
        backend.addLeaseLossListener((lostKey, owner, reason) -> reported.add(owner));

        LockHandle lock = locks.acquire(key, Duration.ZERO);
        assertThat(lock.state()).as("the holder's view of a lease whose session ended before it was recorded")
                .isEqualTo(LockState.LOST);
        assertThat(lock.isHeld()).isFalse();
        // The store's report reaches the listeners from the manager's events thread.
        await("the listener to be told", () -> !lost.isEmpty());
        assertThat(lost).as("lease-lost events").hasSize(1);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    @Test
    void aFixedLeaseIsFreedByItsOwnBackendWhenItRunsOut() throws Exception {
        ZooKeeperLockBackend backend = backend(client());
        assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "fixed", 200)).isInstanceOf(AcquireResult.Acquired.class);
        await("the fixed lease's node to be deleted", () -> queue().isEmpty());
        assertThat(backend.release(LockKind.EXCLUSIVE, key, "fixed", 0)).isEqualTo(ReleaseResult.NOT_OWNER);
    }

    private static void await(String what, Check condition) throws Exception {
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        while (!condition.holds()) {
            if (System.nanoTime() > end) {
                throw new AssertionError("timed out waiting for " + what);
            }
            Thread.sleep(10);
        }
    }

    /** A condition that may read ZooKeeper. */
    @FunctionalInterface
    interface Check {
        boolean holds() throws Exception;
    }
}
