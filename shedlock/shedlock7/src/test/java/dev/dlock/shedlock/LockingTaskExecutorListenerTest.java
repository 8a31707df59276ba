package dev.dlock.shedlock;

import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.core.LockingTaskExecutorListener;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.spring.annotation.EnableSchedulerLock;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Configuration;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * ShedLock 7.7's {@link LockingTaskExecutorListener} (what {@code shedlock-micrometer}'s meters implement) over dlock's
 * provider: {@code @EnableSchedulerLock} hands the application's listener bean every attempt, acquisition, skip and
 * run of a {@code @SchedulerLock} method, and while the task runs the listener sees dlock's lock (its fencing token).
 * ShedLock 6 has no such listener, so this test lives on the 7 line only.
 */
class LockingTaskExecutorListenerTest {

    private final InMemoryLockBackend store = new InMemoryLockBackend();
    private final LockManager locks = LockManager.builder(store).build();
    private final LockManager otherInstance = LockManager.builder(store).build();
    private final Recorder recorder = new Recorder();
    private AnnotationConfigApplicationContext context;

    @AfterEach
    void close() {
        if (context != null) {
            context.close();
        }
        locks.close(Duration.ZERO);
        otherInstance.close(Duration.ZERO);
        store.close();
    }

    @Test
    void theListenerHearsEveryAttemptRunAndSkipOfATaskLockedByDlock() {
        context = new AnnotationConfigApplicationContext();
        context.registerBean(LockProvider.class, () -> new DlockLockProvider(locks));
        context.registerBean(LockingTaskExecutorListener.class, () -> recorder);
        context.registerBean(Job.class);
        context.register(Locking.class);
        context.refresh();
        Job job = context.getBean(Job.class);

        job.run();
        assertThat(job.runs()).isEqualTo(1);
        assertThat(recorder.events).containsExactly("attempt job", "acquired job token", "started job", "finished job");

        recorder.events.clear();
        Instant now = Instant.now();
        SimpleLock held = new DlockLockProvider(otherInstance).lock(
                new LockConfiguration(now, "job", Duration.ofMinutes(1), Duration.ZERO)).orElseThrow();
        try {
            job.run();
        } finally {
            held.unlock();
        }
        assertThat(job.runs()).as("skipped while another instance holds the name").isEqualTo(1);
        assertThat(recorder.events).containsExactly("attempt job", "not acquired job");
    }

    /** ShedLock's method proxies, as an application enables them. */
    @Configuration(proxyBeanMethods = false)
    @EnableSchedulerLock(defaultLockAtMostFor = "10s")
    static class Locking {
    }

    /** A task under ShedLock's lock. */
    static class Job {

        private final AtomicInteger runs = new AtomicInteger();

        @SchedulerLock(name = "job")
        public void run() {
            runs.incrementAndGet();
        }

        /** A method, not a field: the bean seen from outside is ShedLock's proxy, whose fields are not the job's. */
        public int runs() {
            return runs.get();
        }
    }

    /** Records the listener's calls, as a metrics listener would count them. */
    static final class Recorder implements LockingTaskExecutorListener {

        final List<String> events = new CopyOnWriteArrayList<>();

        @Override
        public void onLockAttempt(LockConfiguration configuration) {
            events.add("attempt " + configuration.getName());
        }

        @Override
        public void onLockAcquired(LockConfiguration configuration) {
            // Called on the task's thread after the provider's lock: dlock's lock is already bound there.
            boolean token = ShedLockContext.find().map(lock -> lock.fencingToken() > 0).orElse(false);
            events.add("acquired " + configuration.getName() + (token ? " token" : " no token"));
        }

        @Override
        public void onLockNotAcquired(LockConfiguration configuration) {
            events.add("not acquired " + configuration.getName());
        }

        @Override
        public void onTaskStarted(LockConfiguration configuration) {
            events.add("started " + configuration.getName());
        }

        @Override
        public void onTaskFinished(LockConfiguration configuration, Duration executionTime) {
            events.add("finished " + configuration.getName());
        }
    }
}
