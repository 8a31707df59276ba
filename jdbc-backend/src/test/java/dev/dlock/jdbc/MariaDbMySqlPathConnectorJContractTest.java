package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.BackendFactory;
import dev.dlock.testkit.StoreFailureContractTest;
import dev.dlock.testkit.ServerExtension;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The published contract through the MySQL token path and MySQL Connector/J, the driver MySQL users run, on a
 * MariaDB server started for this class (there is no MySQL server here). Connector/J names every server
 * MySQL, so the dialect is forced; detection through it still says MariaDB. The store tier, the extension tier and the
 * crashes run here; the engine tier, which sends the same statements, on {@link MariaDbMySqlPathContractTest}.
 */
class MariaDbMySqlPathConnectorJContractTest extends StoreFailureContractTest {

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

    /** The SQL is MariaDbMySqlPathContractTest's: through Connector/J, the store and failure tiers are what differ. */
    @Override
    protected String engineTierRunBy() {
        return "MariaDbMySqlPathContractTest";
    }

    private static String jdbcUrl(MariaDbServer server) {
        return "jdbc:mysql://127.0.0.1:" + server.port() + "/dlock";
    }

    private static String connectionOf(MariaDbServer server) {
        return JdbcBackendFactory.connection(jdbcUrl(server), "root", "", "mysql");
    }

    @Test
    void connectorJCallsMariaDbMySqlAndDetectionStillSaysMariaDb() throws SQLException {
        try (Connection connection = DriverManager.getConnection(jdbcUrl(mariaDb), "root", "")) {
            assertThat(connection.getMetaData().getDatabaseProductName()).isEqualTo("MySQL");
            assertThat(JdbcDialect.detect(connection.getMetaData())).isEqualTo(JdbcDialect.MARIADB);
        }
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
