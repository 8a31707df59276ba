package dev.dlock.redis;

import dev.dlock.core.LockKind;
import static dev.dlock.redis.RedisTestSupport.await;
import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

import org.junit.jupiter.api.Test;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;

/**
 * Fencing tokens stay strictly increasing when the counter a node holds is stale: rolled back by
 * hand, or on a replica promoted before it received the master's last acquisitions. The tokens are issued on
 * request, as a holder that reads its token gets it, or with the acquisition and the local hand-off, as a holder that
 * said it reads its token gets it.
 */
class FencingTokenFailoverTest {

    private static final RedisKeys KEYS = new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX);
    private static final Duration BOUND = Duration.ofSeconds(10);

    @Test
    void aTokenIsLargerThanEveryEarlierOneAfterTheCounterWasRolledBackOneStep() {
        try (RedisServerProcess server = RedisServerProcess.start();
             RedisClient client = RedisTestSupport.client(server);
             RedisLockBackend backend = RedisLockBackend.builder(client).build();
             Jedis admin = server.admin()) {
            List<Long> issued = acquireAndRelease(backend, "rolled-back", "before", 3);
            String counter = KEYS.counterKey("rolled-back");
            admin.psetex(counter, 60_000, Long.toString(Long.parseLong(admin.get(counter)) - 1));

            long next = acquireAndRelease(backend, "rolled-back", "after", 1).get(0);

            assertThat(next).as("token after the counter went back one step, issued before: %s", issued)
                    .isGreaterThan(Collections.max(issued));
        }
    }

    @Test
    void aPromotedReplicaThatMissedTheLastAcquisitionsIssuesALargerTokenThanTheOldMaster() {
        assertTokensRiseAcrossAFailover("failover-fence", FencingTokenFailoverTest::acquireAndRelease);
    }

    @Test
    void tokensIssuedWithTheAcquisitionAndTheHandOffRiseAcrossAFailoverToAReplicaThatMissedTheLastOnes() {
        assertTokensRiseAcrossAFailover("failover-fenced-hold", FencingTokenFailoverTest::acquireHandOffAndRelease);
    }

    /** How a test issues tokens: {@code times} holds of {@code key} by owners {@code ownerPrefix-i}; the tokens in turn. */
    private interface Holds {
        List<Long> run(RedisLockBackend backend, String key, String ownerPrefix, int times);
    }

    /**
     * Tokens issued by {@code holds} on a master and replicated, then more only the master has (the replica was promoted
     * before it got them): the promoted node's first token is above all of them.
     */
    private static void assertTokensRiseAcrossAFailover(String key, Holds holds) {
        try (RedisServerProcess master = RedisServerProcess.start();
             RedisServerProcess replica = RedisServerProcess.start(
                     List.of("--replicaof", master.host(), Integer.toString(master.port())));
             RedisClient masterClient = RedisTestSupport.client(master);
             RedisClient replicaClient = RedisTestSupport.client(replica);
             RedisLockBackend onMaster = RedisLockBackend.builder(masterClient).build();
             Jedis masterAdmin = master.admin();
             Jedis replicaAdmin = replica.admin()) {
            String counter = KEYS.counterKey(key);
            await("the replica linked to the master", BOUND,
                    () -> replicaAdmin.info("replication").contains("master_link_status:up"));
            List<Long> issued = new ArrayList<>(holds.run(onMaster, key, "replicated", 3));
            await("the replica holding the master's counter", BOUND,
                    () -> Objects.equals(replicaAdmin.get(counter), masterAdmin.get(counter)));

            replicaAdmin.replicaofNoOne();
            // The promoted node no longer replicates: these acquisitions exist only on the old master.
            issued.addAll(holds.run(onMaster, key, "missed", 3));
            assertThat(replicaAdmin.get(counter)).as("the promoted node's counter is stale")
                    .isNotEqualTo(masterAdmin.get(counter));

            try (RedisLockBackend onPromoted = RedisLockBackend.builder(replicaClient).build()) {
                long first = holds.run(onPromoted, key, "after-failover", 1).get(0);
                assertThat(first).as("first token on the promoted node, issued on the old master: %s", issued)
                        .isGreaterThan(Collections.max(issued));
            }
        }
    }

    /**
     * Takes {@code key} {@code times} times with owners {@code ownerPrefix-i}, the token issued with the acquisition, passes
     * it to a next local holder with that holder's token issued in the hand-off, and releases; returns the tokens in turn.
     */
    private static List<Long> acquireHandOffAndRelease(RedisLockBackend backend, String key, String ownerPrefix, int times) {
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < times; i++) {
            String owner = ownerPrefix + "-" + i;
            AcquireResult result = backend.tryAcquire(LockKind.EXCLUSIVE, key, owner, 10_000, true);
            assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
            tokens.add(((AcquireResult.Acquired) result).fencingToken());
            HandOffResult passed = backend.handOff(key, owner, owner + "-next", 0, true);
            assertThat(passed).isInstanceOf(HandOffResult.Passed.class);
            long token = ((HandOffResult.Passed) passed).fencingToken();
            tokens.add(token);
            assertThat(backend.release(LockKind.EXCLUSIVE, key, owner + "-next", token)).isEqualTo(ReleaseResult.RELEASED);
        }
        assertThat(tokens).isSorted().doesNotHaveDuplicates().allMatch(token -> token > 0);
        return tokens;
    }

    /** Acquires, asks for the token and releases {@code key} {@code times} times with owners {@code ownerPrefix-i}; returns the tokens. */
    private static List<Long> acquireAndRelease(RedisLockBackend backend, String key, String ownerPrefix, int times) {
        List<Long> tokens = new ArrayList<>();
        for (int i = 0; i < times; i++) {
            String owner = ownerPrefix + "-" + i;
            AcquireResult result = backend.tryAcquire(LockKind.EXCLUSIVE, key, owner, 10_000);
            assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
            long token = backend.issueFencingToken(LockKind.EXCLUSIVE, key, owner).orElseThrow();
            tokens.add(token);
            assertThat(backend.release(LockKind.EXCLUSIVE, key, owner, token)).isEqualTo(ReleaseResult.RELEASED);
        }
        return tokens;
    }
}
