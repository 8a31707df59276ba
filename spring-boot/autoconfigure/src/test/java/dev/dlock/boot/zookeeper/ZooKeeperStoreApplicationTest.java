package dev.dlock.boot.zookeeper;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.InstanceSpec;
import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.boot.ZooKeeperLockStoreAutoConfiguration;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.zookeeper.ZooKeeperLockBackend;
import redis.clients.jedis.UnifiedJedis;

/**
 * {@code dlock.store=zookeeper} in a Boot application, on an in-process ZooKeeper: annotated methods
 * lock in ZooKeeper (an overlap detector under 8 threads), an application's own Curator client is
 * reused (the startup log names the ensemble either way), and a missing or unreachable ensemble fails the
 * start naming the property. No Redis is configured or contacted.
 */
@ExtendWith(OutputCaptureExtension.class)
class ZooKeeperStoreApplicationTest {

    private static TestingServer zookeeper;

    /** Counts under a lock, with an overlap detector inside. */
    public static class Counter {
        private final OverlapDetector detector = new OverlapDetector();

        public OverlapDetector detector() {
            return detector;
        }

        @DistributedLock(name = "counter", key = "#key", waitTime = "20s")
        public void increment(String key) {
            detector.enter();
            try {
                detector.incrementUnsafely();
            } finally {
                detector.exit();
            }
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class CounterApplication {
        @Bean
        Counter counter() {
            return new Counter();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class OwnCurator {
        @Bean(destroyMethod = "close")
        CuratorFramework applicationCurator() {
            CuratorFramework client = CuratorFrameworkFactory.newClient(zookeeper.getConnectString(), new RetryOneTime(100));
            client.start();
            return client;
        }
    }

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, RedisLockStoreAutoConfiguration.class,
                    ZooKeeperLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
            .withUserConfiguration(CounterApplication.class)
            .withPropertyValues("dlock.store=zookeeper", "dlock.redis.url=redis://127.0.0.1:1");

    @BeforeAll
    static void startZooKeeper() throws Exception {
        zookeeper = new TestingServer(true);
    }

    @AfterAll
    static void stopZooKeeper() throws Exception {
        zookeeper.close();
    }

    @Test
    void annotatedMethodsLockInZooKeeper() {
        runner.withPropertyValues("dlock.zookeeper.connect-string=" + zookeeper.getConnectString(),
                "dlock.zookeeper.base-path=/apps/shop/locks").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(LockBackend.class)).isInstanceOf(ZooKeeperLockBackend.class);
            assertThat(context).doesNotHaveBean(UnifiedJedis.class);
            Counter counter = context.getBean(Counter.class);
            ExecutorService threads = Executors.newFixedThreadPool(8);
            try {
                List<Future<?>> calls = new ArrayList<>();
                for (int i = 0; i < 200; i++) {
                    calls.add(threads.submit(() -> counter.increment("hot")));
                }
                for (Future<?> call : calls) {
                    call.get(60, TimeUnit.SECONDS);
                }
            } finally {
                threads.shutdown();
            }
            assertThat(counter.detector().overlaps()).as("critical sections that overlapped").isZero();
            assertThat(counter.detector().counter()).isEqualTo(200);
            assertThat(context.getBean(CuratorFramework.class).checkExists().forPath("/apps/shop/locks"))
                    .as("the lock nodes live under the base path").isNotNull();
        });
    }

    @Test
    void theApplicationsCuratorClientIsReused(CapturedOutput output) {
        runner.withUserConfiguration(OwnCurator.class).run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(output.getAll()).as("the startup log names the store")
                    .contains("dlock locks in ZooKeeper " + zookeeper.getConnectString() + " under /dlock");
            assertThat(context.getBeansOfType(CuratorFramework.class)).containsOnlyKeys("applicationCurator");
            context.getBean(Counter.class).increment("once");
            assertThat(context.getBean(Counter.class).detector().counter()).isEqualTo(1);
        });
    }

    @Test
    void withoutAnEnsembleTheStartFailsNamingTheProperty() {
        runner.run(context -> {
            assertThat(context).hasFailed();
            Throwable root = context.getStartupFailure();
            while (root.getCause() != null) {
                root = root.getCause();
            }
            assertThat(root).hasMessageContaining("dlock.zookeeper.connect-string is not set");
        });
    }

    /**
     * dlock.verify-on-start (on by default): an ensemble that does not answer stops the start after at most
     * dlock.zookeeper.connection-timeout, naming the connect string, instead of the first lock failing after
     * Curator's retries. The port is one nothing listens on.
     */
    @Test
    void anEnsembleThatDoesNotAnswerFailsTheStartNamingTheConnectString() {
        String nowhere = "127.0.0.1:" + InstanceSpec.getRandomPort();
        runner.withPropertyValues("dlock.zookeeper.connect-string=" + nowhere, "dlock.zookeeper.connection-timeout=1s")
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("dlock cannot use ZooKeeper at " + nowhere + ": no connection within 1s")
                            .contains("Check dlock.zookeeper.connect-string");
                });
    }

    /** The application's own client is checked too, and the message names that bean rather than a property it did not use. */
    @Test
    void theApplicationsClientIsCheckedAtStartToo() {
        String nowhere = "127.0.0.1:" + InstanceSpec.getRandomPort();
        runner.withPropertyValues("dlock.zookeeper.connection-timeout=1s")
                .withBean("applicationCurator", CuratorFramework.class, () -> {
                    CuratorFramework client = CuratorFrameworkFactory.newClient(nowhere, new RetryOneTime(100));
                    client.start();
                    return client;
                }, definition -> definition.setDestroyMethodName("close"))
                .run(context -> {
                    assertThat(context).hasFailed();
                    assertThat(messages(context.getStartupFailure()))
                            .contains("dlock cannot use ZooKeeper at " + nowhere).contains("CuratorFramework bean");
                });
    }

    /** dlock.verify-on-start=false keeps the lazy start: the context starts, and the store fails when used. */
    @Test
    void withVerifyOnStartOffTheStartDoesNotWaitForTheEnsemble() {
        runner.withPropertyValues("dlock.zookeeper.connect-string=127.0.0.1:" + InstanceSpec.getRandomPort(),
                "dlock.zookeeper.connection-timeout=1s", "dlock.verify-on-start=false").run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(CuratorFramework.class).getZookeeperClient().isConnected()).isFalse();
        });
    }

    private static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
