package dev.dlock.boot;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import javax.sql.DataSource;

import org.apache.curator.test.TestingServer;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport;
import org.springframework.boot.autoconfigure.condition.ConditionEvaluationReport.ConditionAndOutcome;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.memcached.MemcachedLockBackend;
import dev.dlock.zookeeper.ZooKeeperLockBackend;

/**
 * Without {@code dlock.store}, the store is the one whose module the application has — so a store
 * starter alone is enough. Each case hides the other stores' modules and clients from the class loader,
 * as an application with only that starter would have them.
 */
class StoreDetectionTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class, ZooKeeperLockStoreAutoConfiguration.class,
                    JdbcLockStoreAutoConfiguration.class, MemcachedLockStoreAutoConfiguration.class,
                    DistributedLockAutoConfiguration.class));

    @Configuration(proxyBeanMethods = false)
    static class H2Database {
        @Bean
        DataSource dataSource() {
            JdbcDataSource dataSource = new JdbcDataSource();
            dataSource.setURL("jdbc:h2:mem:store-detection;DB_CLOSE_DELAY=-1");
            return dataSource;
        }
    }

    /** An application with the JDBC store's module (and an H2 database) but no other store's. */
    private ApplicationContextRunner onlyTheJdbcModule() {
        return runner.withClassLoader(new FilteredClassLoader("dev.dlock.redis.", "redis.clients.", "dev.dlock.zookeeper.",
                        "org.apache.curator.", "dev.dlock.memcached."))
                .withUserConfiguration(H2Database.class)
                .withPropertyValues("dlock.jdbc.initialize-schema=always");
    }

    @Test
    void onlyTheJdbcModuleMeansLocksInTheDatabase() {
        onlyTheJdbcModule().run(context -> {
            assertThat(context).hasNotFailed();
            assertThat(context.getBean(LockBackend.class)).isInstanceOf(JdbcLockBackend.class);
            try (LockHandle lock = context.getBean(LockManager.class).acquire("detected", Duration.ZERO)) {
                assertThat(lock.isHeld()).isTrue();
            }
        });
    }

    @Test
    void onlyTheZooKeeperModuleMeansLocksInZooKeeper() throws Exception {
        try (TestingServer zookeeper = new TestingServer(true)) {
            runner.withClassLoader(new FilteredClassLoader("dev.dlock.redis.", "redis.clients.", "dev.dlock.jdbc.", "dev.dlock.memcached."))
                    .withPropertyValues("dlock.zookeeper.connect-string=" + zookeeper.getConnectString())
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(LockBackend.class)).isInstanceOf(ZooKeeperLockBackend.class);
                    });
        }
    }

    @Test
    void onlyTheMemcachedModuleMeansLocksInMemcached() {
        runner.withClassLoader(new FilteredClassLoader("dev.dlock.redis.", "redis.clients.", "dev.dlock.zookeeper.",
                        "org.apache.curator.", "dev.dlock.jdbc."))
                .withPropertyValues("dlock.memcached.servers=127.0.0.1:1", "dlock.verify-on-start=false")
                .run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThat(context.getBean(LockBackend.class)).isInstanceOf(MemcachedLockBackend.class);
                });
    }

    @Test
    void noStoreModuleAtAllNamesTheRedisStarterAndTheInMemoryStore() {
        runner.withClassLoader(new FilteredClassLoader("dev.dlock.redis.", "redis.clients.", "dev.dlock.zookeeper.",
                        "org.apache.curator.", "dev.dlock.jdbc.", "dev.dlock.memcached."))
                .run(context -> {
                    assertThat(context).hasFailed();
                    Throwable root = context.getStartupFailure();
                    while (root.getCause() != null) {
                        root = root.getCause();
                    }
                    assertThat(root).hasMessageContaining(BootLine.REDIS_STARTER).hasMessageContaining("dlock.store=in-memory");
                });
    }

    /** Boot's conditions report ({@code --debug}) says, for each store's configuration, which store was chosen and why. */
    @Test
    void theConditionsReportNamesTheChosenStoreAndWhy() {
        runner.withPropertyValues("dlock.store=in-memory").run(context -> {
            assertThat(context).hasNotFailed();
            ConditionEvaluationReport report = ConditionEvaluationReport.get(context.getBeanFactory());
            assertThat(storeOutcomes(report, RedisLockStoreAutoConfiguration.class.getName())).singleElement().satisfies(outcome -> {
                assertThat(outcome.getOutcome().isMatch()).isFalse();
                assertThat(outcome.getOutcome().getMessage())
                        .isEqualTo("@ConditionalOnLockStore (redis) the store is in-memory: dlock.store=in-memory");
            });
            assertThat(storeOutcomes(report, DistributedLockAutoConfiguration.class.getName() + "#dlockInMemoryLockBackend"))
                    .singleElement().satisfies(outcome -> {
                        assertThat(outcome.getOutcome().isMatch()).isTrue();
                        assertThat(outcome.getOutcome().getMessage())
                                .isEqualTo("@ConditionalOnLockStore (in-memory) the store is in-memory: dlock.store=in-memory");
                    });
        });
        onlyTheJdbcModule().run(context -> {
            assertThat(context).hasNotFailed();
            ConditionEvaluationReport report = ConditionEvaluationReport.get(context.getBeanFactory());
            assertThat(storeOutcomes(report, JdbcLockStoreAutoConfiguration.class.getName())).singleElement().satisfies(outcome -> {
                assertThat(outcome.getOutcome().isMatch()).isTrue();
                assertThat(outcome.getOutcome().getMessage()).isEqualTo("@ConditionalOnLockStore (jdbc) the store is jdbc: "
                        + "dlock.store is not set and dlock-jdbc is on the class path (dev.dlock.jdbc.JdbcLockBackend, javax.sql.DataSource)");
            });
        });
    }

    /** The outcomes of {@code @ConditionalOnLockStore} on {@code source} (a class, or {@code class#method}). */
    private static List<ConditionAndOutcome> storeOutcomes(ConditionEvaluationReport report, String source) {
        List<ConditionAndOutcome> outcomes = new ArrayList<>();
        assertThat(report.getConditionAndOutcomesBySource()).as("conditions report").containsKey(source);
        report.getConditionAndOutcomesBySource().get(source).forEach(outcome -> {
            if (outcome.getCondition() instanceof StoreCondition) {
                outcomes.add(outcome);
            }
        });
        return outcomes;
    }
}
