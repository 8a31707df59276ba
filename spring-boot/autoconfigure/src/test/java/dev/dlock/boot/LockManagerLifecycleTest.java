package dev.dlock.boot;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockState;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.scheduling.concurrent.ExecutorConfigurationSupport;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The lock manager's shutdown as a lifecycle phase of the context: after the web server and the task executors, before
 * the store client is destroyed, with {@code dlock.shutdown.grace-period}.
 */
class LockManagerLifecycleTest {

    private static RedisServerProcess redis;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class));

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    /** Higher phases stop first: the web server's drain and stop, then Spring's executors, then dlock, then phase 0. */
    @Test
    void thePhaseComesAfterTheWebServerAndTheExecutorsAndBeforePhaseZero() {
        int webServerStop = BootLine.GRACEFUL_SHUTDOWN_PHASE - 1024;
        assertThat(LockManagerLifecycle.PHASE).isLessThan(webServerStop).isLessThan(ExecutorConfigurationSupport.DEFAULT_PHASE)
                .isPositive();
        runner.withPropertyValues("dlock.store=in-memory").run(context ->
                assertThat(context.getBean(LockManagerLifecycle.class).getPhase()).isEqualTo(LockManagerLifecycle.PHASE));
    }

    @Test
    void theGracePeriodIsAPropertyAndARefusedValueNamesIt() {
        runner.withPropertyValues("dlock.store=in-memory").run(context -> assertThat(
                context.getBean(LockManager.class).shutdownGracePeriod()).isEqualTo(LockManager.DEFAULT_SHUTDOWN_GRACE_PERIOD));
        runner.withPropertyValues("dlock.store=in-memory", "dlock.shutdown.grace-period=3s").run(context -> assertThat(
                context.getBean(LockManager.class).shutdownGracePeriod()).isEqualTo(Duration.ofSeconds(3)));
        runner.withPropertyValues("dlock.store=in-memory", "dlock.shutdown.grace-period=-1s").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasStackTraceContaining("dlock.shutdown.grace-period");
        });
    }

    /**
     * A section still running when the context closes ends 300 ms later and releases its key itself: the manager's
     * shutdown waited for it, so the Redis client (a bean destroyed after every lifecycle phase) was still open.
     */
    @Test
    void aSectionEndingAfterTheCloseBeganReleasesItsOwnKeyBeforeTheRedisClientCloses() throws Exception {
        CountDownLatch closing = new CountDownLatch(1);
        CompletableFuture<String> released = new CompletableFuture<>();
        runner.withPropertyValues("dlock.redis.url=" + redis.uri(), "dlock.shutdown.grace-period=30s")
                .withBean("closingMarker", ApplicationListener.class, () -> (ApplicationListener<ContextClosedEvent>) e -> closing.countDown())
                .run(context -> {
                    LockManager locks = context.getBean(LockManager.class);
                    CountDownLatch held = new CountDownLatch(1);
                    Thread section = new Thread(() -> {
                        LockHandle handle = locks.acquire("lifecycle:section", Duration.ofSeconds(5));
                        held.countDown();
                        try {
                            closing.await();
                            // The section's remaining work, after the close began.
                            Thread.sleep(300);
                        } catch (InterruptedException e) {
                            Thread.currentThread().interrupt();
                        }
                        try {
                            handle.close();
                            released.complete("released, " + handle.state());
                        } catch (RuntimeException e) {
                            released.complete("release failed: " + e);
                        }
                    }, "section");
                    section.start();
                    assertThat(held.await(10, TimeUnit.SECONDS)).isTrue();
                    long start = System.nanoTime();

                    ((ConfigurableApplicationContext) context.getSourceApplicationContext()).close();

                    // The shutdown's wait ends as the lease ends, inside handle.close(): the section thread records what its
                    // close() answered a moment later. That answer tells whether the Redis client was still open for it.
                    assertThat(released.get(10, TimeUnit.SECONDS)).as("the section's release, after close() returned")
                            .isEqualTo("released, " + LockState.RELEASED);
                    assertThat(Duration.ofNanos(System.nanoTime() - start)).as("close() with a 30 s grace period")
                            .isLessThan(Duration.ofSeconds(15));
                });
        try (redis.clients.jedis.Jedis admin = redis.admin()) {
            assertThat(admin.exists("dlock:{lifecycle:section}")).as("the key in Redis after the close").isFalse();
        }
    }

    /** A stop() of a running context (a checkpoint, say) is not its close: the managers stay open. */
    @Test
    void aStopWithoutCloseLeavesTheManagerOpen() {
        runner.withPropertyValues("dlock.store=in-memory").run(context -> {
            ((ConfigurableApplicationContext) context.getSourceApplicationContext()).stop();
            try (LockHandle handle = context.getBean(LockManager.class).acquire("still-open", Duration.ZERO)) {
                assertThat(handle.isHeld()).isTrue();
            }
        });
    }
}
