package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

import com.zaxxer.hikari.HikariDataSource;
import org.h2.tools.Server;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.LockBackendContractTest;

/**
 * The published contract against an in-memory H2 database served over H2's TCP server on a free
 * loopback port, so that the child JVM of the suite locks in the same database. H2 runs inside this
 * JVM, so the crash tests do not apply.
 */
class H2ContractTest extends LockBackendContractTest {

    private static Server server;
    private static String url;
    private static Connection keepAlive;
    private static JdbcContractHooks hooks;

    @BeforeAll
    static void startH2() throws SQLException {
        server = Server.createTcpServer("-tcpPort", Integer.toString(ServerProcesses.freePort())).start();
        url = "jdbc:h2:tcp://127.0.0.1:" + server.getPort() + "/mem:dlock-contract;DB_CLOSE_DELAY=-1";
        // Created here, inside the server's JVM: the TCP server does not create databases for remote clients.
        keepAlive = DriverManager.getConnection("jdbc:h2:mem:dlock-contract;DB_CLOSE_DELAY=-1", "sa", "");
        keepAlive.createStatement().execute("SET QUERY_STATISTICS TRUE");
        keepAlive.createStatement().execute("SET QUERY_STATISTICS_MAX_ENTRIES 1000");
        try (HikariDataSource pool = JdbcBackendFactory.pool(JdbcBackendFactory.connection(url, "sa", ""), 1)) {
            JdbcLockBackend.builder(pool).createSchema(true).build().close();
        }
        hooks = new JdbcContractHooks(() -> DriverManager.getConnection(url, "sa", ""),
                "SELECT COALESCE(SUM(EXECUTION_COUNT), 0) FROM INFORMATION_SCHEMA.QUERY_STATISTICS WHERE LOWER(SQL_STATEMENT) LIKE ?");
    }

    @AfterAll
    static void stopH2() throws SQLException {
        if (keepAlive != null) {
            keepAlive.close();
        }
        if (server != null) {
            server.stop();
        }
    }

    @Override
    protected BackendFactory factory() {
        return new JdbcBackendFactory();
    }

    @Override
    protected String connection() {
        return JdbcBackendFactory.connection(url, "sa", "");
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
}
