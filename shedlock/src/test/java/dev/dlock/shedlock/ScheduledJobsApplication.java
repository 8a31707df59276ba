package dev.dlock.shedlock;

import dev.dlock.core.LockManager;
import net.javacrumbs.shedlock.core.LockAssert;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Clock;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * One instance of an application as ShedLock users write it, run in a child JVM by {@link SchedulerLockTwoJvmsContract}:
 * Spring's scheduler, ShedLock's own {@code @EnableSchedulerLock} and {@code @SchedulerLock}, and dlock's provider as the
 * {@link LockProvider} bean. Two jobs fire every second: {@code tick} (a short run, {@code lockAtLeastFor} 900 ms) and
 * {@code stuck} (once the test created its go file, a run that never ends, {@code lockAtMostFor} 3 s). The scheduler's
 * clock runs {@code lag} ms behind, as nodes' clocks do. Reports to a status file, one line each: {@code READY},
 * {@code TICK <slot> <fencing token>} (the slot is the scheduled second), {@code STUCK <epoch ms> <fencing token>}.
 *
 * <p>Arguments: {@code <store> <status file> <lag ms> <go file>}; the store as {@link TestStores#connect} takes it.
 */
public class ScheduledJobsApplication {

    /** The lockAtMostFor of the stuck job (its annotation's): how long a killed holder keeps it. */
    static final Duration STUCK_LOCK_AT_MOST_FOR = Duration.ofSeconds(3);

    public static void main(String[] args) throws Exception {
        String status = args[1];
        long lag = Long.parseLong(args[2]);
        LockManager locks = LockManager.builder(TestStores.connect(args[0])).build();
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.registerBean(LockProvider.class, () -> new DlockLockProvider(locks));
        context.registerBean("taskScheduler", ThreadPoolTaskScheduler.class, () -> {
            ThreadPoolTaskScheduler scheduler = new ThreadPoolTaskScheduler();
            scheduler.setPoolSize(2);
            scheduler.setClock(Clock.offset(Clock.systemDefaultZone(), Duration.ofMillis(-lag)));
            return scheduler;
        });
        context.registerBean(Jobs.class, () -> new Jobs(status, lag, Path.of(args[3])));
        context.register(Scheduling.class);
        context.refresh();
        report(status, "READY");
        new CountDownLatch(1).await();
    }

    /** Spring's scheduling and ShedLock's, as an application enables them. */
    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "10s")
    static class Scheduling {
    }

    /** The scheduled jobs. */
    public static class Jobs {

        private final String status;
        private final long lag;
        private final Path go;

        public Jobs(String status, long lag, Path go) {
            this.status = status;
            this.lag = lag;
            this.go = go;
        }

        @Scheduled(cron = "* * * * * *")
        @SchedulerLock(name = "tick", lockAtMostFor = "5s", lockAtLeastFor = "900ms")
        public void tick() {
            LockAssert.assertLocked();
            long slot = Math.floorDiv(System.currentTimeMillis() - lag, 1000);
            report(status, "TICK " + slot + " " + ShedLockContext.current().fencingToken());
        }

        @Scheduled(cron = "* * * * * *")
        @SchedulerLock(name = "stuck", lockAtMostFor = "3s")
        public void stuck() throws InterruptedException {
            if (!Files.exists(go)) {
                return;
            }
            report(status, "STUCK " + System.currentTimeMillis() + " " + ShedLockContext.current().fencingToken());
            new CountDownLatch(1).await();
        }
    }

    /** Appends one line to the status file. */
    static synchronized void report(String statusFile, String line) {
        try {
            Files.writeString(Path.of(statusFile), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        } catch (Exception e) {
            // nothing to tell it with: the test's wait runs out and shows the child's output
        }
    }
}
