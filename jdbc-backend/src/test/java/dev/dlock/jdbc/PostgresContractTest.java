package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.SQLException;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.ServerExtension;

/** The published contract, crashes included, against a PostgreSQL server started for this class. */
class PostgresContractTest extends StoreFailureContractTest {

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", PostgresServer::start);

    private static PostgresServer postgres;
    private static JdbcContractHooks hooks;

    @BeforeAll
    static void prepareServer() throws SQLException {
        postgres = POSTGRES.server();
        try (Connection admin = postgres.admin()) {
            admin.createStatement().execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");
        }
        createSchema(connectionOf(postgres));
        hooks = new JdbcContractHooks(postgres::admin,
                "SELECT COALESCE(SUM(calls), 0) FROM pg_stat_statements WHERE query LIKE ?");
    }

    static String connectionOf(PostgresServer server) {
        return JdbcBackendFactory.connection(server.jdbcUrl(), "postgres", "");
    }

    /** Creates the lock table through the backend's own createSchema. */
    static void createSchema(String connection) {
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection, 1)) {
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new JdbcBackendFactory();
    }

    @Override
    protected String connection() {
        return connectionOf(postgres);
    }

    @Override
    protected void deleteKey(String key) {
        hooks.deleteKey(key);
    }

    @Override
    protected void wipeStore() {
        hooks.wipe();
    }

    @Override
    protected long storeCommandCount() {
        return hooks.statementCount();
    }

    @Override
    protected void crashStore() {
        postgres.crash();
    }

    @Override
    protected void restartStore() {
        postgres.launch();
    }
}
