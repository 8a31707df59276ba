package dev.dlock.bench;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import redis.clients.jedis.UnifiedJedis;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryMXBean;
import java.lang.management.ThreadMXBean;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Holds many watchdog-managed leases and measures what keeping them alive costs: store calls per
 * renewal round, watchdog CPU, heap per held lock, and lapses (leases lost; must be 0).
 */
final class WatchdogHarness {

    /** What one run measured. */
    record Result(int leases, Duration lease, int rounds, double callsPerRound, double evalshaPerRound,
                  double watchdogCpuMillisPerRound, double heapBytesPerLock, long lapses, long renewErrors) {
    }

    private WatchdogHarness() {
    }

    static Result run(RedisServerProcess redisServer, int leases, Duration lease, int rounds) throws InterruptedException {
        AtomicLong lapses = new AtomicLong();
        try (UnifiedJedis redis = BenchRedis.client();
             RedisLockBackend backend = RedisLockBackend.builder(redis).build();
             LockManager locks = LockManager.builder(backend).leaseTime(lease).listener(new LockListener() {
                 @Override
                 public void onLeaseLost(String lockName, String key, String reason) {
                     lapses.incrementAndGet();
                 }
             }).build()) {
            MemoryMXBean memory = ManagementFactory.getMemoryMXBean();
            long heapBefore = settledHeap(memory);
            List<LockHandle> held = new ArrayList<>(leases);
            for (int i = 0; i < leases; i++) {
                held.add(locks.acquire("watchdog-bench:" + i, Duration.ZERO));
            }
            long heapAfter = settledHeap(memory);

            long interval = lease.toNanos() / 3;
            // Let the first renewals settle the leases into their rhythm before measuring.
            TimeUnit.NANOSECONDS.sleep(interval * 2);
            ThreadMXBean threads = ManagementFactory.getThreadMXBean();
            long watchdogId = watchdogThreadId();
            long cpuBefore = threads.getThreadCpuTime(watchdogId);
            long callsBefore = locks.admin().watchdogRenewCallCount();
            long evalshaBefore = evalshaCalls(redisServer);
            long start = System.nanoTime();
            TimeUnit.NANOSECONDS.sleep(interval * rounds);
            double measuredRounds = (double) (System.nanoTime() - start) / interval;
            double calls = locks.admin().watchdogRenewCallCount() - callsBefore;
            double evalsha = evalshaCalls(redisServer) - evalshaBefore;
            double cpuMillis = (threads.getThreadCpuTime(watchdogId) - cpuBefore) / 1e6;
            long errors = locks.admin().watchdogErrorCount();
            for (LockHandle handle : held) {
                handle.close();
            }
            return new Result(leases, lease, rounds, calls / measuredRounds, evalsha / measuredRounds,
                    cpuMillis / measuredRounds, (double) (heapAfter - heapBefore) / leases, lapses.get(), errors);
        }
    }

    private static long evalshaCalls(RedisServerProcess server) {
        Map<String, Long> calls = server.commandCalls();
        return calls.getOrDefault("evalsha", 0L) + calls.getOrDefault("eval", 0L);
    }

    private static long watchdogThreadId() {
        for (Thread thread : Thread.getAllStackTraces().keySet()) {
            if (thread.getName().equals("dlock-watchdog")) {
                @SuppressWarnings("deprecation")
                long id = thread.getId();
                return id;
            }
        }
        throw new IllegalStateException("no dlock-watchdog thread");
    }

    /** Used heap after garbage collection: the lowest of five readings, each after a System.gc(). */
    static long settledHeap(MemoryMXBean memory) throws InterruptedException {
        long used = Long.MAX_VALUE;
        for (int i = 0; i < 5; i++) {
            System.gc();
            Thread.sleep(100);
            used = Math.min(used, memory.getHeapMemoryUsage().getUsed());
        }
        return used;
    }
}
