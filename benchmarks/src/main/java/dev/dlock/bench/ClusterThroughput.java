package dev.dlock.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisClusterSetup;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.RedisClusterClient;

/**
 * dlock acquire + release through a cluster client against a 1-master and a 3-master Redis Cluster,
 * alternating rounds; every thread has its own key, so the keys spread over the slots.
 */
final class ClusterThroughput implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(ClusterThroughput.class);

    private final RedisClusterSetup cluster;
    private final RedisClusterClient client;
    private final RedisLockBackend backend;
    private final LockManager locks;

    private ClusterThroughput(int masters) {
        cluster = RedisClusterSetup.start(masters, 0);
        client = RedisClusterClient.builder().nodes(cluster.seeds())
                .clientConfig(DefaultJedisClientConfig.builder().timeoutMillis(2000).build()).build();
        backend = RedisLockBackend.builder(client).build();
        locks = LockManager.builder(backend).build();
    }

    private long acquireAndRelease(String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            return lock.fencingToken();
        }
    }

    /** Measures both clusters at each thread count; returns the Markdown table rows. */
    static List<String> measure(int[] threadCounts, int rounds, long roundMillis) throws InterruptedException {
        List<String> rows = new ArrayList<>();
        rows.add("| threads | 1 master (ops/s) | 3 masters (ops/s) | 3 / 1 (median of per-round ratios) |");
        rows.add("|---|---|---|---|");
        try (ClusterThroughput one = new ClusterThroughput(1); ClusterThroughput three = new ClusterThroughput(3)) {
            List<InterleavedThroughput.Variant> variants = List.of(
                    new InterleavedThroughput.Variant("1 master", one::acquireAndRelease),
                    new InterleavedThroughput.Variant("3 masters", three::acquireAndRelease));
            for (int threads : threadCounts) {
                InterleavedThroughput.Result r = InterleavedThroughput.measure(variants, threads, rounds, roundMillis);
                rows.add(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %.2f |", threads,
                        r.medianOpsPerSecond()[0], r.medianOpsPerSecond()[1], r.medianRatioToFirst()[1]));
                log.info("{}", rows.get(rows.size() - 1));
            }
        }
        return rows;
    }

    @Override
    public void close() {
        locks.close();
        backend.close();
        client.close();
        cluster.close();
    }
}
