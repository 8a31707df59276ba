package dev.dlock.aspect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Clock;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentSkipListMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.OnFailure;

/**
 * One {@code @Scheduled} job on three application instances, each locking in the same Redis, whose
 * clocks run 0, 40 and 80 ms behind — as nodes' clocks do. The job takes a millisecond, so without
 * {@code lockAtLeastFor} the first node has released the lock before the later nodes' ticks fire and
 * they run the job again; with it the lock outlives the job and every tick runs exactly once.
 */
class ScheduledJobTest {

    private static final long[] CLOCK_LAG_MILLIS = {0, 40, 80};
    private static final int TICKS = 4;

    /** The runs of one test, by the wall-clock second they belong to; also the lock key's unique part. */
    public static final class Runs {
        private final String id = UUID.randomUUID().toString();
        final Map<Long, List<String>> byTick = new ConcurrentSkipListMap<>();

        /** The unique part of this test's lock key. */
        public String id() {
            return id;
        }

        void record(String instance) {
            // A tick fires at or a little after the second; the lag of the slowest node stays well inside 300 ms.
            long tick = Math.floorDiv(System.currentTimeMillis() + 300, 1000);
            byTick.computeIfAbsent(tick, t -> new CopyOnWriteArrayList<>()).add(instance);
        }
    }

    /** The job as ShedLock users write it: try once, skip when another node has it, a fixed lease as the upper bound. */
    public static class ReportJob {
        private final Runs runs;
        private final String instance;

        public ReportJob(Runs runs, String instance) {
            this.runs = runs;
            this.instance = instance;
        }

        @Scheduled(cron = "* * * * * *", scheduler = "jobScheduler")
        @DistributedLock(name = "report-job", key = "@runs.id()", waitTime = "0", onFailure = OnFailure.SKIP,
                leaseTime = "10s", lockAtLeastFor = "500ms")
        public void run() {
            runs.record(instance);
        }
    }

    /** The same job without {@code lockAtLeastFor}. */
    public static class ReportJobWithoutMinimum extends ReportJob {
        public ReportJobWithoutMinimum(Runs runs, String instance) {
            super(runs, instance);
        }

        @Override
        @Scheduled(cron = "* * * * * *", scheduler = "jobScheduler")
        @DistributedLock(name = "report-job-no-minimum", key = "@runs.id()", waitTime = "0", onFailure = OnFailure.SKIP,
                leaseTime = "10s")
        public void run() {
            super.run();
        }
    }

    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    static class Scheduling {
    }

    @Test
    void withLockAtLeastForEveryTickRunsOnExactlyOneInstance() throws Exception {
        Runs runs = runOnThreeInstances(true);
        assertThat(completeTicks(runs)).as("runs per tick").isNotEmpty()
                .allSatisfy((tick, instances) -> assertThat(instances).as("instances that ran tick " + tick).hasSize(1));
    }

    @Test
    void withoutItTheLaggingInstancesRunTheSameTickAgain() throws Exception {
        Runs runs = runOnThreeInstances(false);
        // Some tick, not every one: on a loaded machine an instance may start (or lag) past the first complete tick.
        assertThat(completeTicks(runs)).as("runs per tick").isNotEmpty()
                .anySatisfy((tick, instances) -> assertThat(instances).as("instances that ran tick " + tick).hasSizeGreaterThan(1));
    }

    private static Runs runOnThreeInstances(boolean lockAtLeastFor) throws InterruptedException {
        Runs runs = new Runs();
        List<AnnotationConfigApplicationContext> instances = new ArrayList<>();
        try {
            for (int i = 0; i < CLOCK_LAG_MILLIS.length; i++) {
                String instance = "node-" + i;
                long lag = CLOCK_LAG_MILLIS[i];
                instances.add(TestContexts.start(context -> {
                    context.register(TestContexts.DefaultLocking.class, Scheduling.class);
                    context.registerBean("runs", Runs.class, () -> runs);
                    context.registerBean("jobScheduler", ThreadPoolTaskScheduler.class, () -> {
                        ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();
                        scheduler.setThreadNamePrefix(instance + "-scheduler-");
                        scheduler.setClock(Clock.offset(Clock.systemDefaultZone(), Duration.ofMillis(-lag)));
                        return scheduler;
                    });
                    if (lockAtLeastFor) {
                        context.registerBean("job", ReportJob.class, () -> new ReportJob(runs, instance));
                    } else {
                        context.registerBean("job", ReportJobWithoutMinimum.class, () -> new ReportJobWithoutMinimum(runs, instance));
                    }
                }));
            }
            long deadline = System.nanoTime() + Duration.ofSeconds(TICKS + 5).toNanos();
            while (runs.byTick.size() < TICKS + 2 && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
        } finally {
            instances.forEach(AnnotationConfigApplicationContext::close);
        }
        return runs;
    }

    /** The ticks between the first and the last, which the instances may have joined or left part-way. */
    private static Map<Long, List<String>> completeTicks(Runs runs) {
        ConcurrentSkipListMap<Long, List<String>> ticks = new ConcurrentSkipListMap<>(runs.byTick);
        if (ticks.size() < 3) {
            throw new AssertionError("fewer than 3 ticks ran: " + ticks);
        }
        return ticks.subMap(ticks.firstKey(), false, ticks.lastKey(), false);
    }
}
