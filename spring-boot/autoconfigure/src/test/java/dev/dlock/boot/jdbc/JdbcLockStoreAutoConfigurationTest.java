package dev.dlock.boot.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.JdbcLockStoreAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockManager;
import dev.dlock.jdbc.PostgresServer;
import org.h2.jdbcx.JdbcDataSource;
import dev.dlock.jdbc.JdbcLockBackend;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import javax.sql.DataSource;
import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * JDBC store settings take effect, and bad ones fail the start naming the property, before any connection is made;
 * dlock.verify-on-start finds a missing lock table at startup, naming the properties that fix it.
 */
class JdbcLockStoreAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class,
                    JdbcLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
            .withPropertyValues("dlock.store=jdbc");

    @Test
    void withoutADataSourceTheStartFailsNamingTheStore() {
        runner.run(context -> assertThat(context).hasFailed().getFailure()
                .hasStackTraceContaining("dlock.store=jdbc needs one DataSource bean"));
    }

    @Test
    void anInvalidTableNameFailsNamingTheProperty() {
        runner.withBean(DataSource.class, UnreachableDataSource::create)
                .withPropertyValues("dlock.jdbc.table-name=locks; DROP TABLE users")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("dlock.jdbc.table-name is invalid"));
    }

    @Test
    void aQueryTimeoutOutOfRangeFailsNamingTheProperty() {
        runner.withBean(DataSource.class, UnreachableDataSource::create)
                .withPropertyValues("dlock.jdbc.query-timeout=500ms")
                .run(context -> assertThat(context).hasFailed().getFailure()
                        .hasStackTraceContaining("dlock.jdbc.query-timeout is invalid"));
    }

    /** dlock.verify-on-start (on by default): without the lock table the start fails saying how to create it. */
    @Test
    void aMissingLockTableFailsTheStartNamingTheWaysToCreateIt() {
        runner.withBean(DataSource.class, () -> h2("no-lock-table"))
                .withPropertyValues("dlock.jdbc.initialize-schema=never").run(context -> {
            assertThat(context).hasFailed();
            assertThat(context.getStartupFailure()).hasMessageContaining("dlock's lock table dlock_locks")
                    .hasMessageContaining("dlock.jdbc.initialize-schema=always")
                    .hasMessageContaining("schema-h2.sql");
        });
    }

    /** The same on PostgreSQL, whose error the user would otherwise meet on the first lock: relation "dlock_locks" does not exist. */
    @Test
    void aMissingLockTableOnPostgresqlFailsTheStartNamingTheWaysToCreateIt() {
        try (PostgresServer postgres = PostgresServer.start(); HikariDataSource pool = new HikariDataSource()) {
            pool.setJdbcUrl(postgres.jdbcUrl());
            pool.setUsername("postgres");
            pool.setConnectionTimeout(2_000);
            runner.withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.jdbc.table-name=app_locks").run(context -> {
                        assertThat(context).hasFailed();
                        assertThat(context.getStartupFailure())
                                .hasMessageContaining("dlock's lock table app_locks")
                                .hasMessageContaining("relation \"app_locks\" does not exist")
                                .hasMessageContaining("dlock.jdbc.initialize-schema=always")
                                .hasMessageContaining("schema-postgresql.sql");
                    });
        }
    }

    /** With the table created at startup (dlock.jdbc.initialize-schema=always) the check passes. */
    @Test
    void theCheckPassesOnceTheSchemaIsCreated() {
        runner.withBean(DataSource.class, () -> h2("created-lock-table"))
                .withPropertyValues("dlock.jdbc.initialize-schema=always")
                .run(context -> assertThat(context).hasNotFailed());
    }

    /** dlock.verify-on-start=false keeps the lazy start: the missing table is met by the first lock. */
    @Test
    void withVerifyOnStartOffAMissingTableFailsTheFirstLockInstead() {
        runner.withBean(DataSource.class, () -> h2("lazy-lock-table"))
                .withPropertyValues("dlock.verify-on-start=false", "dlock.jdbc.initialize-schema=never").run(context -> {
                    assertThat(context).hasNotFailed();
                    assertThatThrownBy(() -> context.getBean(LockManager.class).acquire("first", Duration.ZERO))
                            .isInstanceOf(LockBackendException.class);
                });
    }

    /** An in-memory H2 database of its own, without dlock's table. */
    private static DataSource h2(String name) {
        JdbcDataSource dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        return dataSource;
    }

    @Test
    void theDialectPropertyForcesTheMySqlTokenPathWithoutConnecting() {
        runner.withBean(DataSource.class, UnreachableDataSource::create)
                .withPropertyValues("dlock.jdbc.dialect=mysql", "dlock.verify-on-start=false")
                .run(context -> assertThat(context).hasNotFailed().getBean(JdbcLockBackend.class)
                        .satisfies(backend -> assertThat(backend.dialect()).hasToString("MYSQL")));
    }

    /**
     * Hikari's default connection timeout (30 s) would hold every locked call that long with the database down, where a
     * lock statement is cut after the query timeout + 2 s: the start says so, naming the setting; a pool set to that
     * bound or less is quiet.
     */
    @Test
    @ExtendWith(OutputCaptureExtension.class)
    void aPoolThatWaitsLongerThanALockStatementIsWarnedAbout(CapturedOutput output) {
        try (HikariDataSource slow = hikariOverH2("slow-pool", 30_000); HikariDataSource bounded = hikariOverH2("bounded-pool", 7_000)) {
            runner.withBean(DataSource.class, () -> slow, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.verify-on-start=false").run(context -> assertThat(context).hasNotFailed());
            assertThat(output.getOut()).contains("the DataSource's pool waits up to 30s for a connection")
                    .contains("Set spring.datasource.hikari.connection-timeout to 7s or less");
            int before = output.getOut().length();
            runner.withBean(DataSource.class, () -> bounded, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.verify-on-start=false").run(context -> assertThat(context).hasNotFailed());
            assertThat(output.getOut().substring(before)).contains("dlock locks in table")
                    .doesNotContain("spring.datasource.hikari.connection-timeout");
        }
    }

    private static HikariDataSource hikariOverH2(String name, long connectionTimeoutMillis) {
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        pool.setConnectionTimeout(connectionTimeoutMillis);
        return pool;
    }

    /** A pool pointing where nothing listens; never connected, because validation fails first. */
    private static final class UnreachableDataSource {
        static DataSource create() {
            HikariDataSource dataSource = new HikariDataSource();
            dataSource.setJdbcUrl("jdbc:postgresql://127.0.0.1:1/none");
            dataSource.setInitializationFailTimeout(-1);
            return dataSource;
        }
    }
}
