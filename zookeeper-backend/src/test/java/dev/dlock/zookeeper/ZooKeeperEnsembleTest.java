package dev.dlock.zookeeper;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.OverlapDetector;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingCluster;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A three-node ensemble in this JVM loses its leader while one client holds a key and another waits
 * for it. Every client's connection drops during the election, so the holder is told its lease is lost
 * (a suspended connection counts as lost); its node lives on with its session, so the waiter gets the
 * key only once the holder released it, with a larger token, and the two never overlap.
 */
class ZooKeeperEnsembleTest {

    private TestingCluster cluster;
    private final List<CuratorFramework> clients = new ArrayList<>();
    private final List<ZooKeeperLockBackend> backends = new ArrayList<>();
    private final List<LockManager> managers = new ArrayList<>();

    @AfterEach
    void stop() throws Exception {
        managers.forEach(LockManager::close);
        backends.forEach(ZooKeeperLockBackend::close);
        clients.forEach(CuratorFramework::close);
        if (cluster != null) {
            cluster.close();
        }
    }

    private LockManager manager(LockListener listener) {
        // Retries span an election: a call made while the ensemble has no leader waits for the new one.
        CuratorFramework client = ZooKeeperBackendFactory.client(cluster.getConnectString(), 30);
        clients.add(client);
        ZooKeeperLockBackend backend = ZooKeeperLockBackend.builder(client).build();
        backends.add(backend);
        LockManager manager = LockManager.builder(backend).listener(listener).build();
        managers.add(manager);
        return manager;
    }

    @Test
    void aLeaderLostDuringAHoldAndAWaitNeverLetsTwoHoldersIn() throws Exception {
        ZooKeeperTestServer.applyServerSettings();
        cluster = ZooKeeperTestServer.ensemble(3);
        cluster.start();
        String key = "ensemble:" + System.nanoTime();
        CountDownLatch holderTold = new CountDownLatch(1);
        LockManager holder = manager(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String lostKey, String reason) {
                holderTold.countDown();
            }
        });
        LockManager waiter = manager(LockListener.NO_OP);
        OverlapDetector detector = new OverlapDetector();

        LockHandle held = holder.acquire(key, Duration.ZERO);
        long holderToken = held.fencingToken();
        detector.enter();
        AtomicLong waiterToken = new AtomicLong();
        AtomicReference<Throwable> waiterFailure = new AtomicReference<>();
        CountDownLatch waiting = new CountDownLatch(1);
        Thread waiterThread = new Thread(() -> {
            waiting.countDown();
            try (LockHandle next = waiter.acquire(key, Duration.ofSeconds(60))) {
                detector.enter();
                waiterToken.set(next.fencingToken());
                detector.exit();
            } catch (Throwable t) {
                waiterFailure.set(t);
            }
        });
        waiterThread.start();
        assertThat(waiting.await(10, TimeUnit.SECONDS)).isTrue();
        String keyPath = ZooKeeperLockBackend.keyPath(ZooKeeperLockBackend.DEFAULT_BASE_PATH, key);
        long end = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (clients.get(0).getChildren().forPath(keyPath).size() < 2) {
            assertThat(System.nanoTime()).as("the waiter queued").isLessThan(end);
            Thread.sleep(10);
        }

        InstanceSpec leader = leaderOf(cluster);
        assertThat(cluster.killServer(leader)).as("leader %s killed", leader).isTrue();

        assertThat(holderTold.await(30, TimeUnit.SECONDS)).as("holder told its lease is lost").isTrue();
        detector.exit();
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);

        waiterThread.join(60_000);
        assertThat(waiterFailure.get()).as("the waiter's outcome").isNull();
        assertThat(waiterToken.get()).as("the waiter got the key with a larger token").isGreaterThan(holderToken);
        assertThat(detector.overlaps()).isZero();
    }

    private static InstanceSpec leaderOf(TestingCluster cluster) {
        for (InstanceSpec spec : cluster.getInstances()) {
            if ("leader".equals(ZooKeeperTestServer.srvr(spec.getPort(), "Mode:"))) {
                return spec;
            }
        }
        throw new AssertionError("no leader in " + cluster.getConnectString());
    }
}
