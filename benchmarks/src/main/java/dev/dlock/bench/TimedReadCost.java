package dev.dlock.bench;

import java.util.List;
import java.util.Locale;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Function;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

/**
 * What a socket read timeout costs a Jedis caller: the raw-Jedis pair ({@code SET NX PX}, then a compare-and-delete
 * script) over a client with a 5 s timeout against the same pair over a client with none, in alternating rounds.
 * Since JDK 13 a socket with a timeout (or connected with one) is non-blocking underneath: each reply is a
 * {@code read} that finds nothing yet, a {@code poll}, and a second {@code read}, where a socket without one blocks
 * in one {@code read}. Count the system calls with {@code perf stat -e 'syscalls:sys_enter_read,syscalls:sys_enter_poll'
 * -p <pid>}. Arguments: thread counts (comma-separated, default {@code 1,8}), rounds (default 9), ms per round
 * (default 1000).
 */
public final class TimedReadCost {

    private static final Logger log = LoggerFactory.getLogger(TimedReadCost.class);
    private static final String COMPARE_AND_DELETE =
            "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";

    private TimedReadCost() {
    }

    /** Entry point; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        String[] threadCounts = (args.length > 0 ? args[0] : "1,8").split(",");
        int rounds = args.length > 1 ? Integer.parseInt(args[1]) : 9;
        long roundMillis = args.length > 2 ? Long.parseLong(args[2]) : 1000;
        try (RedisServerProcess redis = RedisServerProcess.start()) {
            System.setProperty(BenchRedis.PROPERTY, redis.uri());
            try (UnifiedJedis timed = BenchRedis.client(5000); UnifiedJedis untimed = BenchRedis.client(0)) {
                String sha = timed.scriptLoad(COMPARE_AND_DELETE);
                List<InterleavedThroughput.Variant> variants = List.of(
                        new InterleavedThroughput.Variant("read timeout 5 s", pair(timed, sha)),
                        new InterleavedThroughput.Variant("no read timeout", pair(untimed, sha)));
                StringBuilder table = new StringBuilder(String.format(Locale.ROOT,
                        "%n| threads | with a read timeout, pairs/s | without, pairs/s | without / with (median of rounds) |%n|---:|---:|---:|---:|%n"));
                for (String threads : threadCounts) {
                    InterleavedThroughput.Result result = InterleavedThroughput.measure(variants, Integer.parseInt(threads.trim()),
                            rounds, roundMillis);
                    table.append(String.format(Locale.ROOT, "| %d | %,.0f | %,.0f | %.3f |%n", result.threads(),
                            result.medianOpsPerSecond()[0], result.medianOpsPerSecond()[1], result.medianRatioToFirst()[1]));
                }
                log.info("Raw Jedis pairs, {} alternating rounds of {} ms:{}", rounds, roundMillis, table);
            }
        }
    }

    private static Function<String, Object> pair(UnifiedJedis client, String compareAndDeleteSha) {
        String ownerPrefix = UUID.randomUUID() + ":";
        AtomicLong sequence = new AtomicLong();
        SetParams params = new SetParams().nx().px(30_000);
        return key -> {
            String owner = ownerPrefix + sequence.incrementAndGet();
            if (!"OK".equals(client.set(key, owner, params))) {
                throw new IllegalStateException("key " + key + " held; each thread has its own");
            }
            return client.evalsha(compareAndDeleteSha, List.of(key), List.of(owner));
        };
    }
}
