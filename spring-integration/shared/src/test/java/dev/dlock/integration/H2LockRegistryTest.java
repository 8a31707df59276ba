package dev.dlock.integration;

import java.util.UUID;

import org.h2.jdbcx.JdbcDataSource;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcLockBackend;

/**
 * The registry's Lock contract on the JDBC store (H2 in memory, one database per test): what users of Spring
 * Integration's {@code JdbcLockRegistry} move from. Each manager has a backend of its own over the same database.
 */
class H2LockRegistryTest extends LockRegistryContract {

    private final JdbcDataSource database = new JdbcDataSource();

    H2LockRegistryTest() {
        database.setURL("jdbc:h2:mem:registry-" + UUID.randomUUID() + ";DB_CLOSE_DELAY=-1");
        database.setUser("sa");
    }

    @Override
    protected LockBackend newBackend() {
        return JdbcLockBackend.builder(database).createSchema(true).build();
    }
}
