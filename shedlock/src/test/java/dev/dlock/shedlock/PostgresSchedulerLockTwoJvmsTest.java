package dev.dlock.shedlock;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's scheduled jobs in two JVMs on a real PostgreSQL (the database's clock counts the leases). */
class PostgresSchedulerLockTwoJvmsTest extends SchedulerLockTwoJvmsContract {

    private static PostgresServer postgres;

    @BeforeAll
    static void startPostgres() {
        postgres = PostgresServer.start();
        try (HikariDataSource pool = new HikariDataSource()) {
            pool.setJdbcUrl(postgres.jdbcUrl());
            pool.setUsername("postgres");
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
    }

    @AfterAll
    static void stopPostgres() {
        if (postgres != null) {
            postgres.close();
        }
    }

    @Override
    protected String store() {
        // JdbcBackendFactory's connection string: url|user|password
        return postgres.jdbcUrl() + "|postgres|";
    }
}
