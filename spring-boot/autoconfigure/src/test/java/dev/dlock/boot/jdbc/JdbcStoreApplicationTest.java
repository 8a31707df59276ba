package dev.dlock.boot.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcDialect;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.context.ApplicationContext;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import redis.clients.jedis.UnifiedJedis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Boot application with a DataSource bean and {@code dlock.store=jdbc} runs its
 * {@code @DistributedLock} methods in PostgreSQL, on a server this test starts; the schema comes
 * from {@code dlock.jdbc.initialize-schema=always}, and no Redis client is created. (The DataSource is a bean
 * of the test rather than Boot's DataSource auto-configuration, which would then run in every other
 * test of this module too.)
 */
@SpringBootTest(classes = {CounterApplication.class, JdbcStoreApplicationTest.PostgresDataSource.class}, properties = {
        "dlock.store=jdbc",
        "dlock.jdbc.initialize-schema=always",
        "dlock.jdbc.table-name=app_locks"})
class JdbcStoreApplicationTest {

    private static final PostgresServer POSTGRES = PostgresServer.start();

    /** The application's pool, over the test's server. */
    @TestConfiguration
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
    static void stopPostgres() {
        POSTGRES.close();
    }

    @Autowired
    private CounterApplication.Counter counter;

    @Autowired
    private ApplicationContext context;

    @Test
    void annotatedMethodsLockInPostgresql() throws Exception {
        LockBackend backend = context.getBean(LockBackend.class);
        assertThat(backend).isInstanceOfSatisfying(JdbcLockBackend.class, jdbc -> {
            assertThat(jdbc.dialect()).isEqualTo(JdbcDialect.POSTGRESQL);
            assertThat(jdbc.tableName()).isEqualTo("app_locks");
        });
        assertThat(context.getBeanNamesForType(UnifiedJedis.class)).as("Redis clients").isEmpty();

        ExecutorService threads = Executors.newFixedThreadPool(8);
        try {
            List<Future<?>> calls = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                calls.add(threads.submit(() -> counter.increment("hot")));
            }
            for (Future<?> call : calls) {
                call.get();
            }
        } finally {
            threads.shutdown();
        }
        assertThat(counter.detector().overlaps()).as("critical sections that overlapped").isZero();
        assertThat(counter.detector().counter()).isEqualTo(400);
    }
}
