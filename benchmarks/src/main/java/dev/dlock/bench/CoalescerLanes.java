package dev.dlock.bench;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.CoalescerBenchAccess;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

/**
 * How many coalescer lanes per node to run: uncontended lock + unlock pairs on distinct keys, raw Jedis against dlock
 * with each lane setting (and without coalescing), and the pair a Lua-free acquisition makes ({@code SET NX PX}, then
 * the release script) through a coalescer of each setting, in alternating rounds on one Redis. A setting is a fixed
 * lane count ({@code 2}) or the range the store's rule moves in ({@code 2-8}: all lanes for few callers, fewer for
 * many). Ratios are medians of per-round ratios to raw Jedis; a second pass per variant reads
 * {@code INFO commandstats} and {@code INFO cpu}, which load on a shared machine moves far less than throughput:
 * Redis commands per pair, Redis µs per pair, µs per {@code EVALSHA}. Arguments:
 * {@code [ms per round] [rounds] [thread counts] [lane settings]}, e.g. {@code 1000 7 8,64 1,2,4,8,2-8}.
 */
public final class CoalescerLanes {

    private static final Logger log = LoggerFactory.getLogger(CoalescerLanes.class);
    private static final Duration WAIT = Duration.ofSeconds(60);

    private CoalescerLanes() {
    }

    /** Entry point; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        long roundMillis = args.length > 0 ? Long.parseLong(args[0]) : 1000;
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 5;
        int[] threadCounts = ints(args.length > 2 ? args[2] : "8,64");
        String[] laneSettings = (args.length > 3 ? args[3] : "2,8,2-8").split(",");
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            List<AutoCloseable> resources = new ArrayList<>();
            List<InterleavedThroughput.Variant> variants = new ArrayList<>();
            LockUnderTest raw = PeerLocks.open("raw-jedis");
            resources.add(raw);
            variants.add(new InterleavedThroughput.Variant("raw-jedis", key -> locked(raw, key)));
            LockUnderTest direct = PeerLocks.open("dlock-direct");
            resources.add(direct);
            variants.add(new InterleavedThroughput.Variant("dlock-direct", key -> locked(direct, key)));
            for (String lanes : laneSettings) {
                UnifiedJedis client = BenchRedis.client();
                RedisLockBackend backend = CoalescerBenchAccess.backend(client, minLanes(lanes), maxLanes(lanes));
                LockManager locks = LockManager.builder(backend).build();
                resources.add(locks);
                resources.add(backend);
                resources.add(client);
                variants.add(new InterleavedThroughput.Variant("dlock-lanes-" + lanes, key -> {
                    try (LockHandle ignored = locks.acquire(key, WAIT)) {
                        return key;
                    }
                }));
            }
            for (String lanes : laneSettings) {
                UnifiedJedis client = BenchRedis.client();
                resources.add(client);
                variants.add(new InterleavedThroughput.Variant("set+release-lanes-" + lanes,
                        CoalescerBenchAccess.setThenRelease(client, minLanes(lanes), maxLanes(lanes))));
            }
            try {
                for (int threads : threadCounts) {
                    report(redis, variants, threads, rounds, roundMillis);
                }
            } finally {
                for (int i = resources.size() - 1; i >= 0; i--) {
                    resources.get(i).close();
                }
            }
        }
    }

    private static void report(RedisServerProcess redis, List<InterleavedThroughput.Variant> variants, int threads, int rounds,
                               long roundMillis) throws Exception {
        InterleavedThroughput.Result result = InterleavedThroughput.measure(variants, threads, rounds, roundMillis);
        StringBuilder table = new StringBuilder(String.format(Locale.ROOT, "%n| variant | pairs/s | × raw Jedis | "
                + "commands / pair | Redis command µs / pair | Redis CPU µs / pair | µs / EVALSHA | µs / SET |%n"
                + "|---|---:|---:|---:|---:|---:|---:|---:|%n"));
        for (int i = 0; i < variants.size(); i++) {
            ServerCost cost = serverCost(redis, variants.get(i), threads, roundMillis);
            table.append(String.format(Locale.ROOT, "| %s | %,.0f | %.2f | %.2f | %.1f | %.1f | %.2f | %.2f |%n",
                    variants.get(i).name(), result.medianOpsPerSecond()[i], result.medianRatioToFirst()[i],
                    cost.commandsPerPair, cost.commandMicrosPerPair, cost.cpuMicrosPerPair,
                    cost.microsPerCall("evalsha"), cost.microsPerCall("set")));
        }
        log.info("{} threads, {} rounds of {} ms (ratios: median of per-round ratios):{}", threads, rounds, roundMillis, table);
    }

    /** Redis's own accounting of one variant's pairs: commands and command time (commandstats), and its CPU (INFO cpu). */
    private record ServerCost(double commandsPerPair, double commandMicrosPerPair, double cpuMicrosPerPair,
                              Map<String, double[]> byCommand) {

        double microsPerCall(String command) {
            double[] callsAndMicros = byCommand.get(command);
            return callsAndMicros == null ? 0 : callsAndMicros[1] / callsAndMicros[0];
        }
    }

    private static ServerCost serverCost(RedisServerProcess redis, InterleavedThroughput.Variant variant, int threads,
                                         long millis) throws InterruptedException {
        try (Jedis admin = redis.admin()) {
            admin.configResetStat();
            double cpuBefore = BenchRedis.serverCpuMicros(admin);
            long pairs = run(variant.name(), variant.operation(), threads, millis);
            double cpu = BenchRedis.serverCpuMicros(admin) - cpuBefore;
            Map<String, double[]> byCommand = commandStats(admin.info("commandstats"));
            double calls = 0;
            double micros = 0;
            for (Map.Entry<String, double[]> command : byCommand.entrySet()) {
                if (!command.getKey().equals("info") && !command.getKey().startsWith("config")) {
                    calls += command.getValue()[0];
                    micros += command.getValue()[1];
                }
            }
            return new ServerCost(calls / pairs, micros / pairs, cpu / pairs, byCommand);
        }
    }

    /** Calls and µs per command from {@code INFO commandstats}. */
    private static Map<String, double[]> commandStats(String info) {
        Map<String, double[]> stats = new LinkedHashMap<>();
        for (String line : info.split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            double[] callsAndMicros = new double[2];
            for (String field : line.substring(colon + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    callsAndMicros[0] = Double.parseDouble(field.substring("calls=".length()));
                } else if (field.startsWith("usec=")) {
                    callsAndMicros[1] = Double.parseDouble(field.substring("usec=".length()));
                }
            }
            stats.put(line.substring("cmdstat_".length(), colon), callsAndMicros);
        }
        return stats;
    }

    /** Runs {@code operation} on {@code threads} threads, each on a key of its own, for {@code millis}; answers how many ran. */
    private static long run(String name, Function<String, Object> operation, int threads, long millis) throws InterruptedException {
        List<String> keys = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            keys.add("cost:" + UUID.randomUUID());
        }
        return InterleavedThroughput.runOnEveryKey(name, operation, keys, millis);
    }

    private static Object locked(LockUnderTest library, String key) {
        try {
            return library.locked(key, key::length);
        } catch (Exception e) {
            throw new IllegalStateException(library.name() + " failed on " + key, e);
        }
    }

    private static int minLanes(String setting) {
        return Integer.parseInt(setting.split("-")[0].trim());
    }

    private static int maxLanes(String setting) {
        String[] range = setting.split("-");
        return Integer.parseInt(range[range.length - 1].trim());
    }

    private static int[] ints(String commaSeparated) {
        String[] parts = commaSeparated.split(",");
        int[] values = new int[parts.length];
        for (int i = 0; i < parts.length; i++) {
            values[i] = Integer.parseInt(parts[i].trim());
        }
        return values;
    }
}
