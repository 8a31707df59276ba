package dev.dlock.jdbc;

import java.lang.reflect.Proxy;
import java.sql.DatabaseMetaData;
import java.sql.SQLException;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The dialect comes from the product name and version a driver reports. */
class JdbcDialectTest {

    @Test
    void mySqlGetsTheMySqlTokenPath() throws SQLException {
        assertThat(JdbcDialect.detect(metaData("MySQL", "8.0.36"))).hasToString("MYSQL");
    }

    @Test
    void mariaDbIsMariaDbThroughEitherDriver() throws SQLException {
        assertThat(JdbcDialect.detect(metaData("MariaDB", "10.11.19-MariaDB-0+deb12u1"))).isEqualTo(JdbcDialect.MARIADB);
        // MySQL Connector/J reports every server as MySQL; a MariaDB server shows in the version.
        assertThat(JdbcDialect.detect(metaData("MySQL", "5.5.5-10.11.19-MariaDB-0+deb12u1"))).isEqualTo(JdbcDialect.MARIADB);
    }

    @Test
    void postgreSqlAndH2AreDetected() throws SQLException {
        assertThat(JdbcDialect.detect(metaData("PostgreSQL", "17.5"))).isEqualTo(JdbcDialect.POSTGRESQL);
        assertThat(JdbcDialect.detect(metaData("H2", "2.3.232 (2024-08-11)"))).isEqualTo(JdbcDialect.H2);
    }

    /** Metadata that answers only the product's name and version, as a driver would report them. */
    private static DatabaseMetaData metaData(String product, String version) {
        return (DatabaseMetaData) Proxy.newProxyInstance(JdbcDialectTest.class.getClassLoader(),
                new Class<?>[] {DatabaseMetaData.class}, (proxy, method, args) -> switch (method.getName()) {
                    case "getDatabaseProductName" -> product;
                    case "getDatabaseProductVersion" -> version;
                    default -> throw new UnsupportedOperationException(method.getName());
                });
    }
}
