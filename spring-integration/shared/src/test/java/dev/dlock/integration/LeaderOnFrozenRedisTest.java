package dev.dlock.integration;

import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerExtension;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClient;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Spring Integration leader over dlock whose Redis freezes (SIGSTOP) past the lease: the leadership is revoked as soon
 * as dlock knows the lease is lost, not after the client's socket timeout. The unlock of a lease known to be lost
 * throws at once and its release goes on in the background; waiting for the frozen Redis there kept the leader working
 * for seconds after another JVM could have taken over.
 */
class LeaderOnFrozenRedisTest {

    /** Far longer than the lease: an unlock that waited for the frozen server would revoke this late at the earliest. */
    private static final int CLIENT_TIMEOUT_MILLIS = 8_000;
    private static final Duration LEASE = Duration.ofMillis(1_500);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void aLeaderIsRevokedAsSoonAsItsLeaseIsKnownToBeLostWhileRedisIsFrozen() throws Exception {
        RedisServerProcess server = redis.server();
        CompletableFuture<Long> lostAt = new CompletableFuture<>();
        CompletableFuture<Long> grantedAt = new CompletableFuture<>();
        CompletableFuture<Long> revokedAt = new CompletableFuture<>();
        try (RedisClient client = RedisClient.builder().hostAndPort(server.host(), server.port())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(CLIENT_TIMEOUT_MILLIS).build()).build();
             LockManager locks = LockManager.builder(RedisLockBackend.builder(client).build()).leaseTime(LEASE)
                     .shutdownGracePeriod(Duration.ZERO).listener(new LockListener() {
                         @Override
                         public void onLeaseLost(String lockName, String key, String reason) {
                             lostAt.complete(System.nanoTime());
                         }
                     }).build()) {
            LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(new DlockLockRegistry(locks, "leaders"),
                    new DefaultCandidate("frozen", "cluster-leader") {
                        @Override
                        public void onGranted(Context context) {
                            grantedAt.complete(System.nanoTime());
                        }

                        @Override
                        public void onRevoked(Context context) {
                            revokedAt.complete(System.nanoTime());
                        }
                    });
            initiator.start();
            try {
                grantedAt.get(30, TimeUnit.SECONDS);
                long revokedAfterLoss;
                try (RedisServerProcess.Stall frozen = server.stall()) {
                    long lost = lostAt.get(30, TimeUnit.SECONDS);
                    long revoked = revokedAt.get(30, TimeUnit.SECONDS);
                    revokedAfterLoss = TimeUnit.NANOSECONDS.toMillis(revoked - lost);
                }
                assertThat(revokedAfterLoss).as("ms from dlock's lost lease to OnRevoked (the client's timeout is %s ms)",
                        CLIENT_TIMEOUT_MILLIS).isLessThan(CLIENT_TIMEOUT_MILLIS / 2);
            } finally {
                initiator.stop();
            }
        }
    }
}
