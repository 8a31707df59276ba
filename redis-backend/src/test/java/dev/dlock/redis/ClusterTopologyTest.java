package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.RecordingBackend;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClusterClient;

/** Cluster-specific behaviour on 3 masters + 3 replicas: renewals grouped per master, notices on every shard, a master failover. */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class ClusterTopologyTest {

    private static final Logger log = LoggerFactory.getLogger(ClusterTopologyTest.class);
    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;

    @BeforeAll
    static void start() {
        cluster = RedisClusterSetup.start(3, 1);
        client = TopologyBackendFactory.clusterClient(cluster.seeds(), 10, Duration.ofSeconds(10));
    }

    @AfterAll
    static void stop() throws Exception {
        RedisTestSupport.closeAll(client, cluster);
    }

    @Test
    @Order(1)
    void leasesOnManySlotsAreAllRenewedWithoutAnyError() {
        Map<String, AtomicLong> renewals = new ConcurrentHashMap<>();
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build();
             LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofMillis(900))
                     .listener(renewalCounter(renewals)).build()) {
            List<LockHandle> held = new ArrayList<>();
            for (int i = 0; i < 150; i++) {
                held.add(locks.acquire("slots-" + i, Duration.ofSeconds(5)));
            }
            RedisTestSupport.await("every lease renewed twice", Duration.ofSeconds(15), () -> held.stream()
                    .allMatch(h -> renewals.getOrDefault(h.key(), new AtomicLong()).get() >= 2));
            assertThat(locks.admin().watchdogErrorCount()).as("no CROSSSLOT or other renewal error").isZero();
            assertThat(held).allMatch(LockHandle::isHeld);
            held.forEach(LockHandle::close);
        }
    }

    @Test
    @Order(2)
    void renewalsOfLeasesOnManySlotsGoToEachMasterTogether() {
        int leases = 300;
        int masters = cluster.currentMasters().size();
        List<String> lost = Collections.synchronizedList(new ArrayList<>());
        AtomicLong renewCalls = new AtomicLong();
        try (RedisLockBackend redis = RedisLockBackend.builder(client).build();
             RecordingBackend backend = new RecordingBackend(redis);
             LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofMillis(500))
                     .listener(RedisTestSupport.lossRecorder(lost, new ConcurrentHashMap<>())).build()) {
            backend.beforeRenew(batch -> renewCalls.incrementAndGet());
            List<LockHandle> held = new ArrayList<>();
            Set<Integer> slots = new HashSet<>();
            Set<StoreNode> groups = new HashSet<>();
            for (int i = 0; i < leases; i++) {
                String key = "per-node-" + UUID.randomUUID();
                slots.add(KEYS.slot(key));
                groups.add(redis.nodeOf(key));
                held.add(locks.acquire(key, Duration.ofSeconds(5)));
            }

            long callsBefore = renewCalls.get();
            long renewalsBefore = backend.renewals.size();
            RedisTestSupport.await("five renewal rounds", Duration.ofSeconds(30),
                    () -> backend.renewals.size() - renewalsBefore >= 5L * leases);
            double rounds = (double) (backend.renewals.size() - renewalsBefore) / leases;
            double callsPerRound = (renewCalls.get() - callsBefore) / rounds;
            log.info("{} leases on {} slots of {} masters: {} renew calls per round", leases, slots.size(), masters,
                    callsPerRound);

            // One call per master each time the watchdog wakes (a few times per round as leases fall due), not one per slot.
            assertThat(callsPerRound).as("renew calls per round for %s leases on %s slots of %s masters",
                    leases, slots.size(), masters).isLessThanOrEqualTo(10.0 * masters);
            assertThat(groups).as("renewal groups are the masters").hasSize(masters);
            assertThat(lost).as("leases reported lost").isEmpty();
            assertThat(held).allMatch(LockHandle::isHeld);
            held.forEach(LockHandle::close);
        }
    }

    @Test
    @Order(3)
    void aBatchWhoseKeysLiveOnEveryMasterIsRenewedByRoutingEachKey() {
        // A group computed before a failover can name a node that no longer owns some of its slots.
        try (RedisLockBackend backend = RedisLockBackend.builder(client).build()) {
            List<LeaseRenewal> batch = new ArrayList<>();
            for (RedisServerProcess master : cluster.currentMasters()) {
                for (int i = 0; i < 3; i++) {
                    String key = RedisTestSupport.keyOwnedBy(cluster, master, "stale-group-" + i + "-");
                    assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "me", 5_000)).isInstanceOf(AcquireResult.Acquired.class);
                    batch.add(new LeaseRenewal(key, "me", 60_000));
                }
            }
            batch.add(new LeaseRenewal("stale-group-never-taken", "me", 60_000));

            List<RenewalResult> results = backend.renew(batch);

            assertThat(results.subList(0, batch.size() - 1)).containsOnly(RenewalResult.RENEWED);
            assertThat(results.get(batch.size() - 1)).isEqualTo(RenewalResult.EXPIRED);
            for (LeaseRenewal renewal : batch.subList(0, batch.size() - 1)) {
                try (Jedis admin = cluster.masterOf(KEYS.lockKey(renewal.key())).admin()) {
                    assertThat(admin.pttl(KEYS.lockKey(renewal.key()))).as(renewal.key()).isGreaterThan(30_000L);
                }
                backend.release(LockKind.EXCLUSIVE, renewal.key(), "me", 0);
            }
        }
    }

    @Test
    @Order(4)
    void aReleaseWakesAWaiterOnEveryMaster() throws Exception {
        try (RedisLockBackend holderBackend = RedisLockBackend.builder(client).build();
             RedisLockBackend waiterBackend = RedisLockBackend.builder(client).build();
             LockManager holder = LockManager.builder(holderBackend).build();
             LockManager waiter = LockManager.builder(waiterBackend).build()) {
            for (RedisServerProcess master : cluster.currentMasters()) {
                String key = RedisTestSupport.keyOwnedBy(cluster, master, "notice-");
                LockHandle lock = holder.acquire(key, Duration.ZERO);
                Supplier<Long> waiting = RedisTestSupport.startWaiter(waiter, key, Duration.ofSeconds(25));
                Thread.sleep(300);
                long releasedAt = System.nanoTime();
                lock.close();
                RedisTestSupport.assertWokenByNotice(waiting, releasedAt, master.uri());
            }
        }
    }

    @Test
    @Order(5)
    void afterAMasterIsKilledItsPromotedReplicaServesAgain() throws Exception {
        List<String> lost = Collections.synchronizedList(new ArrayList<>());
        Map<String, Long> watchdogNews = new ConcurrentHashMap<>();
        RedisServerProcess victim = cluster.initialMasters().get(0);
        // Retries bounded well below the renewal interval: the one watchdog thread must not be held up by one dead master.
        try (RedisClusterClient failoverClient = TopologyBackendFactory.clusterClient(cluster.seeds(), 5, Duration.ofMillis(1500));
             RedisLockBackend backend = RedisLockBackend.builder(failoverClient).build();
             LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofSeconds(6))
                     .listener(RedisTestSupport.lossRecorder(lost, watchdogNews)).build();
             RedisClusterClient idleClient = TopologyBackendFactory.clusterClient(cluster.seeds(), 5, Duration.ofMillis(1500));
             RedisLockBackend idleBackend = RedisLockBackend.builder(idleClient).build()) {
            List<LeaseRenewal> staleGroup = replicatedLeasesOn(victim, idleBackend);
            List<LockHandle> held = new ArrayList<>();
            List<String> victimKeys = new ArrayList<>();
            for (int i = 0; i < 5; i++) {
                String key = RedisTestSupport.keyOwnedBy(cluster, victim, "failover-held-" + i + "-");
                victimKeys.add(key);
                held.add(locks.acquire(key, Duration.ofSeconds(5)));
            }
            for (int i = 0; i < 5; i++) {
                held.add(locks.acquire("failover-elsewhere-" + i, Duration.ofSeconds(5)));
            }
            FailoverProbe probe = FailoverProbe.start(locks, "failover-loop-");
            probe.awaitSuccesses(20);
            long killedAt = System.nanoTime();
            victim.kill();
            RedisServerProcess promoted = cluster.awaitPromotion(KEYS.lockKey(victimKeys.get(0)), victim, Duration.ofSeconds(30));
            long promotedAt = System.nanoTime();
            probe.awaitSuccessAfter(promotedAt, Duration.ofSeconds(30));
            FailoverProbe.Report report = probe.stop();
            log.info("Cluster failover: {} promoted after {} ms; acquisitions failed for {} ms ({} errors, longest call {} ms)",
                    promoted.uri(), (promotedAt - killedAt) / 1_000_000, report.errorWindowMillis(), report.errors(),
                    report.longestCallMillis());
            assertThat(report.longestCallMillis()).as("no call hangs").isLessThan(15_000);
            assertThat(report.errorWindowMillis()).as("bounded error window").isLessThan(30_000);
            try (LockHandle again = locks.acquire(RedisTestSupport.keyOwnedBy(cluster, promoted, "after-failover-"), Duration.ofSeconds(10))) {
                assertThat(again.isHeld()).as("the promoted replica serves its slots").isTrue();
            }
            RedisTestSupport.awaitWatchdogNewsAfter(held, watchdogNews, promotedAt);
            RedisTestSupport.assertHeldOrReportedLost(held, lost, locks, backend);
            held.forEach(RedisTestSupport::closeQuietly);

            // A client idle through the failover still names the dead master for these slots.
            assertThat(idleBackend.renew(staleGroup)).as("renewal of a group formed before the failover")
                    .containsOnly(RenewalResult.RENEWED);
            assertThat(idleBackend.nodeOf(staleGroup.get(0).key())).isEqualTo(new StoreNode(promoted.host() + ":" + promoted.port()));
        }
    }

    /** Takes 3 keys of different slots on {@code master} and waits until its replica has them. */
    private static List<LeaseRenewal> replicatedLeasesOn(RedisServerProcess master, RedisLockBackend backend) {
        List<LeaseRenewal> leases = new ArrayList<>();
        for (int i = 0; i < 3; i++) {
            String key = RedisTestSupport.keyOwnedBy(cluster, master, "stale-route-" + i + "-");
            assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, key, "idle", 60_000)).isInstanceOf(AcquireResult.Acquired.class);
            leases.add(new LeaseRenewal(key, "idle", 60_000));
        }
        assertThat(leases.stream().map(l -> KEYS.slot(l.key())).distinct()).hasSize(leases.size());
        RedisServerProcess replica = cluster.nodes().stream()
                .filter(node -> replicationInfo(node).contains("master_port:" + master.port()))
                .findFirst().orElseThrow();
        try (Jedis admin = replica.admin()) {
            admin.readonly();
            RedisTestSupport.await("the replica holding the keys", Duration.ofSeconds(10), () -> leases.stream()
                    .allMatch(l -> "idle".equals(admin.get(KEYS.lockKey(l.key())))));
        }
        return leases;
    }

    private static String replicationInfo(RedisServerProcess node) {
        try (Jedis admin = node.admin()) {
            return admin.info("replication");
        }
    }

    private static LockListener renewalCounter(Map<String, AtomicLong> renewals) {
        return new LockListener() {
            @Override
            public void onRenewal(String lockName, String key, RenewalOutcome outcome) {
                if (outcome == RenewalOutcome.RENEWED) {
                    renewals.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
                }
            }
        };
    }
}
