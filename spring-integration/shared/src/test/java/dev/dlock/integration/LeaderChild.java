package dev.dlock.integration;

import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.leader.event.LeaderEventPublisher;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import redis.clients.jedis.RedisClient;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * One candidate of {@link LeaderElectionAcrossJvmsTest}, in a JVM of its own: Spring Integration's real
 * {@link LockRegistryLeaderInitiator} over a {@link DlockLockRegistry} on the test's Redis, with its default heartbeat
 * and busy wait. It reports to its status file, one line per event, each with this machine's wall clock in
 * milliseconds (the parent compares the lines of several children): {@code STARTED}, {@code GRANTED <fencing token>}
 * (read in the granted event, on the thread that holds the lock), {@code REVOKED}, {@code FAILED} (an attempt that
 * found another leader) and {@code LOST <reason>} (dlock's listener: the lease was lost). It runs until it is killed,
 * or for {@link #LIFETIME} at most.
 */
public final class LeaderChild {

    /** The role: the lock key. */
    static final String ROLE = "cluster-leader";
    /** The child halts by itself after this long, should its parent die without killing it. */
    private static final Duration LIFETIME = Duration.ofMinutes(3);

    private LeaderChild() {
    }

    /** {@code host port instanceId leaseMillis statusFile}. */
    public static void main(String[] args) throws Exception {
        Path status = Path.of(args[4]);
        RedisClient client = RedisClient.create(args[0], Integer.parseInt(args[1]));
        LockManager locks = LockManager.builder(RedisLockBackend.builder(client).build()).instanceId(args[2])
                .leaseTime(Duration.ofMillis(Long.parseLong(args[3])))
                .listener(new LockListener() {
                    @Override
                    public void onLeaseLost(String lockName, String key, String reason) {
                        report(status, "LOST " + reason);
                    }
                }).build();
        DlockLockRegistry registry = new DlockLockRegistry(locks, "leaders");
        LockRegistryLeaderInitiator initiator = new LockRegistryLeaderInitiator(registry, new DefaultCandidate(args[2], ROLE));
        initiator.setPublishFailedEvents(true);
        initiator.setLeaderEventPublisher(new LeaderEventPublisher() {
            @Override
            public void publishOnGranted(Object source, Context context, String role) {
                report(status, "GRANTED " + registry.obtain(role).fencingToken());
            }

            @Override
            public void publishOnRevoked(Object source, Context context, String role) {
                report(status, "REVOKED");
            }

            @Override
            public void publishOnFailedToAcquire(Object source, Context context, String role) {
                report(status, "FAILED");
            }
        });
        initiator.start();
        report(status, "STARTED");
        Thread.sleep(LIFETIME.toMillis());
        Runtime.getRuntime().halt(1);
    }

    /** Appends {@code <wall clock ms> <event>} to the status file, in one write. */
    private static void report(Path status, String event) {
        try {
            Files.writeString(status, System.currentTimeMillis() + " " + event + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.APPEND);
        } catch (Exception e) {
            // Nothing to tell it with: the parent's wait runs out and shows the child's output.
        }
    }
}
