package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Jedis;

/**
 * The backend contract over Redlock on five independent masters. Deleting a key deletes it on every
 * master (a majority would do; all is the plain reading of "behind the holder's back"); wiping
 * flushes every master; crashing kills every master and restarting starts every one again, empty;
 * the command count sums every master.
 */
class RedlockContractTest extends StoreFailureContractTest {

    static final List<RedisServerProcess> masters = new ArrayList<>();

    @BeforeAll
    static void startMasters() {
        for (int i = 0; i < 5; i++) {
            masters.add(RedisServerProcess.start());
        }
    }

    @AfterAll
    static void stopMasters() {
        masters.forEach(RedisServerProcess::close);
        masters.clear();
    }

    static Set<HostAndPort> addresses(List<RedisServerProcess> servers) {
        Set<HostAndPort> addresses = new LinkedHashSet<>();
        for (RedisServerProcess server : servers) {
            addresses.add(new HostAndPort(server.host(), server.port()));
        }
        return addresses;
    }

    @Override
    protected BackendFactory factory() {
        return new TopologyBackendFactory();
    }

    @Override
    protected String connection() {
        return TopologyBackendFactory.connection(TopologyBackendFactory.REDLOCK, addresses(masters), null);
    }

    @Override
    protected void deleteKey(String key) {
        long deleted = 0;
        for (RedisServerProcess master : masters) {
            try (Jedis admin = master.admin()) {
                deleted += admin.del(new RedisKeys(RedisLockBackend.DEFAULT_KEY_PREFIX).lockKey(key));
            }
        }
        assertThat(deleted).as("deleted the lock key on a quorum of masters").isGreaterThanOrEqualTo(3);
    }

    /**
     * A renewal is RENEWED once a quorum of masters renewed it; the others may still be running it, and a refusal
     * answers with the least TTL among the masters that decided it. The lease a quorum holds is what it promises.
     */
    @Override
    protected long renewedLeaseRemainingMillis(String key, AcquireResult.Held refusal) {
        return RedisTestSupport.leaseOnAQuorum(masters, key);
    }

    @Override
    protected void wipeStore() {
        for (RedisServerProcess master : masters) {
            try (Jedis admin = master.admin()) {
                admin.flushAll();
            }
        }
    }

    @Override
    protected void crashStore() {
        masters.forEach(RedisServerProcess::kill);
    }

    @Override
    protected void restartStore() {
        masters.forEach(RedisServerProcess::restart);
    }

    @Override
    protected long storeCommandCount() {
        // Redlock answers at quorum; the slower masters' share of the last call (their acquire, the
        // fencing raise) can still arrive for a moment. Count once no master's count moves for 50 ms.
        long deadline = System.nanoTime() + java.util.concurrent.TimeUnit.SECONDS.toNanos(5);
        long previous;
        long current = commandsOnAllMasters();
        do {
            previous = current;
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            current = commandsOnAllMasters();
        } while (current != previous && System.nanoTime() < deadline);
        return current;
    }

    private static long commandsOnAllMasters() {
        return masters.stream().mapToLong(RedisServerProcess::clientCommandCalls).sum();
    }

    /** Fewer turns than a one-round-trip store: an acquisition here is a script on each of three nodes. */
    @Override
    protected int contendedTurnsPerThread() {
        return 150;
    }
}
