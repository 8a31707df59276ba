package dev.dlock.shedlock;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The provider's contract on a real PostgreSQL (the database's clock counts the leases); every instance has a pool of its own. */
class PostgresDlockLockProviderTest extends DlockLockProviderContract {

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
    protected LockBackend newBackend() {
        // JdbcBackendFactory's connection string: url|user|password
        return TestStores.connect(postgres.jdbcUrl() + "|postgres|");
    }

    @Override
    protected void dispose(LockBackend backend) {
        TestStores.dispose(backend);
    }
}
