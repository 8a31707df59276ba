package dev.dlock.boot.shedlock;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.ShedLockAutoConfiguration;
import dev.dlock.core.HeldLock;
import dev.dlock.core.LockManager;
import dev.dlock.shedlock.DlockLockProvider;
import dev.dlock.shedlock.ShedLockContext;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.scheduling.annotation.EnableScheduling;
import org.springframework.scheduling.annotation.Scheduled;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShedLock's provider from the application's lock manager: offered when ShedLock and dlock-shedlock are present and
 * the application has no provider, replaceable, absent otherwise; and ShedLock's own {@code @EnableSchedulerLock}
 * runs {@code @SchedulerLock} methods (called, and fired by Spring's scheduler) through it on this Boot line's Spring.
 */
class ShedLockAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class, ShedLockAutoConfiguration.class))
            .withPropertyValues("dlock.store=in-memory");

    @Test
    void anApplicationWithShedLockGetsDlocksProviderOverItsLockManager() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(LockProvider.class).hasSingleBean(DlockLockProvider.class);
            LockManager locks = context.getBean(LockManager.class);
            Optional<SimpleLock> lock = context.getBean(LockProvider.class)
                    .lock(new LockConfiguration(Instant.now(), "report", Duration.ofMinutes(1), Duration.ZERO));
            assertThat(lock).isPresent();
            assertThat(locks.admin().heldLocks()).extracting(HeldLock::key).containsExactly("shedlock:report");
            lock.get().unlock();
            assertThat(locks.admin().heldLocks()).isEmpty();
        });
    }

    @Test
    void anApplicationsOwnProviderIsKept() {
        LockProvider own = configuration -> Optional.empty();
        runner.withBean(LockProvider.class, () -> own)
                .run(context -> assertThat(context).getBean(LockProvider.class).isSameAs(own));
    }

    @Test
    void withoutShedLockOrDlockShedLockOrWithDlockOffThereIsNoProviderAndTheContextStarts() {
        runner.withClassLoader(new FilteredClassLoader(DlockLockProvider.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockProvider.class));
        runner.withClassLoader(new FilteredClassLoader(LockProvider.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockProvider.class));
        runner.withPropertyValues("dlock.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockProvider.class));
    }

    @Test
    void schedulerLockMethodsRunThroughItOnceAtATimeCalledOrScheduled() throws Exception {
        runner.withUserConfiguration(Scheduling.class).run(context -> {
            Jobs jobs = context.getBean(Jobs.class);
            Runs runs = context.getBean(Runs.class);
            LockManager locks = context.getBean(LockManager.class);
            CompletableFuture<Void> first = CompletableFuture.runAsync(jobs::export);
            assertThat(runs.exporting.await(30, TimeUnit.SECONDS)).as("the first export started").isTrue();
            assertThat(locks.admin().heldLocks()).extracting(HeldLock::key).contains("shedlock:export");

            jobs.export();

            assertThat(runs.exports).as("exports run while one held the lock").hasValue(1);
            runs.finish.countDown();
            first.get(30, TimeUnit.SECONDS);
            jobs.export();
            assertThat(runs.exports).as("exports run after it ended").hasValue(2);

            assertThat(runs.ticked.await(30, TimeUnit.SECONDS)).as("Spring's scheduler ran the tick").isTrue();
            assertThat(runs.ticks).first().asString().startsWith("shedlock:tick ");
        });
    }

    /** Scheduling and ShedLock as an application enables them; the provider comes from dlock. */
    @Configuration(proxyBeanMethods = false)
    @EnableScheduling
    @EnableSchedulerLock(defaultLockAtMostFor = "1m")
    static class Scheduling {

        @Bean
        Runs runs() {
            return new Runs();
        }

        @Bean
        Jobs jobs(Runs runs) {
            return new Jobs(runs);
        }
    }

    /** What the jobs did (a bean of its own: ShedLock proxies the jobs, whose fields the proxy does not share). */
    static class Runs {
        final AtomicInteger exports = new AtomicInteger();
        final CountDownLatch exporting = new CountDownLatch(1);
        final CountDownLatch finish = new CountDownLatch(1);
        final List<String> ticks = new CopyOnWriteArrayList<>();
        final CountDownLatch ticked = new CountDownLatch(2);
    }

    /** A scheduled job and one called directly, both under ShedLock. */
    static class Jobs {

        private final Runs runs;

        Jobs(Runs runs) {
            this.runs = runs;
        }

        @SchedulerLock(name = "export", lockAtMostFor = "1m")
        public void export() {
            runs.exports.incrementAndGet();
            runs.exporting.countDown();
            try {
                runs.finish.await(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }

        @Scheduled(fixedDelay = 20)
        @SchedulerLock(name = "tick", lockAtMostFor = "1m")
        public void tick() {
            runs.ticks.add(ShedLockContext.current().key() + " " + ShedLockContext.current().fencingToken());
            runs.ticked.countDown();
        }
    }
}
