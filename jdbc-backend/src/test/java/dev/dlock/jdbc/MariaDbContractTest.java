package dev.dlock.jdbc;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.ServerExtension;

/** The published contract, crashes included, against a MariaDB server started for this class. */
class MariaDbContractTest extends StoreFailureContractTest {

    @RegisterExtension
    static final ServerExtension<MariaDbServer> MARIADB = new ServerExtension<>("MariaDB server", MariaDbServer::start);

    private static MariaDbServer mariaDb;
    private static JdbcContractHooks hooks;

    @BeforeAll
    static void prepareServer() {
        mariaDb = MARIADB.server();
        JdbcBackendFactory.createSchema(connectionOf(mariaDb));
        hooks = hooksOf(mariaDb);
    }

    /** The contract's store hooks on {@code server}: statements counted by performance_schema. */
    static JdbcContractHooks hooksOf(MariaDbServer server) {
        return new JdbcContractHooks(server::admin, "SELECT COALESCE(SUM(COUNT_STAR), 0)"
                + " FROM performance_schema.events_statements_summary_by_digest WHERE DIGEST_TEXT LIKE ?");
    }

    static String connectionOf(MariaDbServer server) {
        return JdbcBackendFactory.connection(server.jdbcUrl(), "root", "");
    }

    @Override
    protected BackendFactory factory() {
        return new JdbcBackendFactory();
    }

    @Override
    protected String connection() {
        return connectionOf(mariaDb);
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
        mariaDb.kill();
    }

    @Override
    protected void restartStore() {
        mariaDb.launch();
    }
}
