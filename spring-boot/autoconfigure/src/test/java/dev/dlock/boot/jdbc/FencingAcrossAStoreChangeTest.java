package dev.dlock.boot.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.JdbcLockStoreAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.fencing.FencedTable;
import dev.dlock.fencing.JdbcFencing;
import dev.dlock.jdbc.PostgresServer;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import javax.sql.DataSource;
import java.time.Duration;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application changes its lock store from Redis to JDBC and keeps its fencing guard: the account row accepted a
 * token from Redis (microseconds, about 1.8e15), and the first holder after the change, on PostgreSQL, writes through
 * the same guard. The JDBC store's sequence used to start at 1, so every fenced write after the change was refused.
 */
class FencingAcrossAStoreChangeTest {

    private static final String KEY = "account:1";

    @Test
    void aNewHoldersTokenFromTheJdbcStorePassesAGuardThatAcceptedRedisTokens() {
        try (RedisServerProcess redis = RedisServerProcess.start(); PostgresServer postgres = PostgresServer.start();
             HikariDataSource pool = new HikariDataSource()) {
            pool.setJdbcUrl(postgres.jdbcUrl());
            pool.setUsername("postgres");
            pool.setConnectionTimeout(5_000);
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            jdbc.execute("CREATE TABLE account (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL)");
            jdbc.update("INSERT INTO account (id, balance, fence_token) VALUES (1, 0, 0)");
            FencedTable accounts = new JdbcFencing(jdbc).table("account", "fence_token");

            AtomicLong redisToken = new AtomicLong();
            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
                    .withPropertyValues("dlock.store=redis", "dlock.redis.url=" + redis.uri())
                    .run(context -> redisToken.set(creditUnderTheLock(context.getBean(LockManager.class), accounts)));
            assertThat(jdbc.queryForObject("SELECT fence_token FROM account WHERE id = 1", Long.class))
                    .as("the token the guard accepted from Redis").isEqualTo(redisToken.get());

            new ApplicationContextRunner()
                    .withConfiguration(AutoConfigurations.of(JdbcLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
                    .withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.store=jdbc", "dlock.jdbc.initialize-schema=always")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        long jdbcToken = creditUnderTheLock(context.getBean(LockManager.class), accounts);
                        assertThat(jdbcToken).as("the JDBC store's first token after Redis's %d", redisToken.get())
                                .isGreaterThan(redisToken.get());
                    });
            assertThat(jdbc.queryForObject("SELECT balance FROM account WHERE id = 1", Long.class))
                    .as("both credits written").isEqualTo(20);
        }
    }

    /** One fenced credit of 10 by the holder of the account's lock; its token. */
    private static long creditUnderTheLock(LockManager locks, FencedTable accounts) {
        try (LockHandle lock = locks.acquire(KEY, Duration.ofSeconds(5))) {
            long token = lock.fencingToken();
            assertThat(accounts.update(token, "balance = balance + ?", "id = ?", 10, 1)).isEqualTo(1);
            return token;
        }
    }
}
