package dev.dlock.jdbc;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;

/**
 * The published contract, crashes included, through the MySQL token path (no sequence: {@code dialect=mysql}
 * forced) on a MariaDB server started for this class. There is no MySQL server here; MariaDB runs the same SQL.
 */
class MariaDbMySqlPathContractTest extends StoreFailureContractTest {

    private static MariaDbServer mariaDb;
    private static JdbcContractHooks hooks;

    @BeforeAll
    static void startMariaDb() {
        mariaDb = MariaDbServer.start();
        JdbcBackendFactory.createSchema(connectionOf(mariaDb));
        hooks = MariaDbContractTest.hooksOf(mariaDb);
    }

    @AfterAll
    static void stopMariaDb() {
        if (mariaDb != null) {
            mariaDb.close();
        }
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
