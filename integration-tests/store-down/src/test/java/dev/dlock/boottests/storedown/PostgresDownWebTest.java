package dev.dlock.boottests.storedown;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.test.annotation.DirtiesContext;

/**
 * The web application on PostgreSQL ({@code dlock.store=jdbc}); the store goes down as the server
 * stops at once ({@code pg_ctl -m immediate}), cutting the pool's open connections.
 */
@SpringBootTest(classes = {OrderApplication.class, PostgresDownWebTest.PostgresDataSource.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"dlock.store=jdbc", "dlock.jdbc.initialize-schema=always"})
@DirtiesContext
class PostgresDownWebTest extends StoreDownWebContract {

    private static final PostgresServer POSTGRES = PostgresServer.start();

    /** The application's pool, over the test's server. */
    @TestConfiguration(proxyBeanMethods = false)
    static class PostgresDataSource {
        @Bean(destroyMethod = "close")
        HikariDataSource dataSource() {
            HikariDataSource dataSource = new HikariDataSource();
            dataSource.setJdbcUrl(POSTGRES.jdbcUrl());
            dataSource.setUsername("postgres");
            dataSource.setConnectionTimeout(2_000);
            return dataSource;
        }
    }

    @AfterAll
    static void closePostgres() {
        POSTGRES.close();
    }

    @Override
    void stopStore() {
        POSTGRES.crash();
    }
}
