package dev.dlock.boot.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.JdbcLockStoreAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.jdbc.JdbcLockBackend;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import javax.sql.DataSource;

import static org.assertj.core.api.Assertions.assertThat;

/** JDBC store settings take effect, and bad ones fail the start naming the property, before any connection is made. */
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

    @Test
    void theDialectPropertyForcesTheMySqlTokenPathWithoutConnecting() {
        runner.withBean(DataSource.class, UnreachableDataSource::create)
                .withPropertyValues("dlock.jdbc.dialect=mysql")
                .run(context -> assertThat(context).hasNotFailed().getBean(JdbcLockBackend.class)
                        .satisfies(backend -> assertThat(backend.dialect()).hasToString("MYSQL")));
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
