package dev.dlock.jdbc;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.ServerExtension;

/**
 * The published contract, crashes included, through the MySQL token path (no sequence: {@code dialect=mysql}
 * forced) on a MariaDB server started for this class. There is no MySQL server here; MariaDB runs the same SQL.
 */
class MariaDbMySqlPathContractTest extends StoreFailureContractTest {

    @RegisterExtension
    static final ServerExtension<MariaDbServer> MARIADB = new ServerExtension<>("MariaDB server", MariaDbServer::start);

    private static MariaDbServer mariaDb;
    private static JdbcContractHooks hooks;

    @BeforeAll
    static void prepareServer() {
        mariaDb = MARIADB.server();
        JdbcBackendFactory.createSchema(connectionOf(mariaDb));
        hooks = MariaDbContractTest.hooksOf(mariaDb);
    }

    /** The connection string that forces the MySQL dialect on {@code server}. */
    static String connectionOf(MariaDbServer server) {
        return JdbcBackendFactory.connection(server.jdbcUrl(), "root", "", "mysql");
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
