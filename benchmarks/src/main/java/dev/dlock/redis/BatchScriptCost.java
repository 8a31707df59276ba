package dev.dlock.redis;

import dev.dlock.bench.BenchRedis;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Locale;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.Pipeline;

/**
 * What one call of the batch script ({@link LuaScript.Batch}) costs Redis against the same scripts as EVALSHAs of
 * their own in one pipeline: the Redis server's CPU ({@code INFO cpu}) per exclusive acquire + release pair, for
 * batches of 1 to 32 pairs, in alternating rounds; the median of the per-round ratios batch / separate. Both ways
 * send each batch as one pipeline, so the difference is Redis's own work, not system calls. Arguments:
 * {@code [embedded]} to run the embedded Redis 6.2 instead of the {@code redis-server} the testkit finds.
 */
public final class BatchScriptCost {

    private static final Logger log = LoggerFactory.getLogger(BatchScriptCost.class);
    private static final int ROUNDS = 7;
    private static final int PAIRS_PER_ROUND = 20_000;

    private BatchScriptCost() {
    }

    /** Entry point; see the class comment. */
    public static void main(String[] args) throws Exception {
        LuaScript acquire = LuaScript.load("acquire.lua", "fencing.lua", "notices.lua");
        LuaScript release = LuaScript.load("release.lua", "notices.lua");
        LuaScript.Batch batch = LuaScript.batch();
        boolean embedded = args.length > 0 && args[0].equals("embedded");
        try (RedisServerProcess redis = embedded ? RedisServerProcess.startEmbedded() : RedisServerProcess.start();
             Jedis jedis = redis.admin(); Jedis admin = redis.admin()) {
            jedis.scriptLoad(acquire.source());
            jedis.scriptLoad(release.source());
            jedis.scriptLoad(batch.source());
            StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                    "%n| pairs per batch | separate: Redis CPU µs / pair | batch script: µs / pair | batch / separate |%n"
                            + "|---:|---:|---:|---:|%n"));
            for (int size : new int[] {1, 2, 4, 8, 16, 32}) {
                List<Double> separate = new ArrayList<>();
                List<Double> together = new ArrayList<>();
                List<Double> ratios = new ArrayList<>();
                for (int round = 0; round < ROUNDS; round++) {
                    double alone = pairs(jedis, admin, acquire, release, null, size);
                    double batched = pairs(jedis, admin, acquire, release, batch, size);
                    separate.add(alone);
                    together.add(batched);
                    ratios.add(batched / alone);
                }
                table.append(String.format(Locale.ROOT, "| %d | %.2f | %.2f | %.3f |%n", size, median(separate), median(together),
                        median(ratios)));
            }
            log.info("Redis {}: {} rounds of {} pairs per batch size:{}", redis.version(), ROUNDS, PAIRS_PER_ROUND, table);
        }
    }

    /** Redis CPU µs per pair: {@code size} acquisitions then their releases per pipeline, batched when {@code batch} is set. */
    private static double pairs(Jedis jedis, Jedis admin, LuaScript acquire, LuaScript release, LuaScript.Batch batch,
                                int size) {
        double before = BenchRedis.serverCpuMicros(admin);
        int batches = PAIRS_PER_ROUND / size;
        for (int b = 0; b < batches; b++) {
            Pipeline pipeline = jedis.pipelined();
            LuaScript.Batch.Calls acquisitions = batch == null ? null : batch.calls();
            LuaScript.Batch.Calls releases = batch == null ? null : batch.calls();
            for (int i = 0; i < size; i++) {
                String key = "cost{" + i + "}";
                List<String> acquireKeys = List.of(key, key + ":fence");
                List<String> acquireArgs = List.of("owner" + i, "30000", "86400000");
                List<String> releaseKeys = List.of(key, key + ":released", key + ":fence");
                List<String> releaseArgs = List.of("owner" + i, "classic", "0", "marked");
                if (batch == null) {
                    pipeline.evalsha(acquire.sha1(), acquireKeys, acquireArgs);
                    pipeline.evalsha(release.sha1(), releaseKeys, releaseArgs);
                } else {
                    acquisitions.add(acquire, acquireKeys, acquireArgs);
                    releases.add(release, releaseKeys, releaseArgs);
                }
            }
            if (batch != null) {
                pipeline.evalsha(batch.sha1(), acquisitions.keys(), acquisitions.args());
                pipeline.evalsha(batch.sha1(), releases.keys(), releases.args());
            }
            pipeline.sync();
        }
        return (BenchRedis.serverCpuMicros(admin) - before) / ((double) batches * size);
    }

    private static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
