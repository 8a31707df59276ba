package dev.dlock.jdbc;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A fleet starting at once on a fresh database: several instances each create the schema
 * ({@code createSchema(true)}) at the same moment, and every one must start. Each round releases
 * {@value #INSTANCES} builders on a barrier, over connections already open, against a table no round used
 * before; PostgreSQL's {@code CREATE SEQUENCE/TABLE IF NOT EXISTS} of two sessions at once used to fail one
 * of them with {@code duplicate key value violates unique constraint "pg_type_typname_nsp_index"}.
 */
class SchemaCreationRaceTest {

    private static final int INSTANCES = 8;
    private static final int ROUNDS = 12;

    @Test
    void concurrentSchemaCreationsAllSucceedOnPostgresql() throws Exception {
        try (PostgresServer postgres = PostgresServer.start()) {
            runRounds(PostgresContractTest.connectionOf(postgres), JdbcDialect.POSTGRESQL);
        }
    }

    @Test
    void concurrentSchemaCreationsAllSucceedOnMariaDb() throws Exception {
        try (MariaDbServer mariaDb = MariaDbServer.start()) {
            runRounds(MariaDbContractTest.connectionOf(mariaDb), JdbcDialect.MARIADB);
            runRounds(MariaDbContractTest.connectionOf(mariaDb), JdbcDialect.MYSQL);
        }
    }

    @Test
    void concurrentSchemaCreationsAllSucceedOnH2() throws Exception {
        runRounds(JdbcBackendFactory.connection("jdbc:h2:mem:schema-race;DB_CLOSE_DELAY=-1", "sa", ""), JdbcDialect.H2);
    }

    private static void runRounds(String connection, JdbcDialect dialect) throws Exception {
        ExecutorService instances = Executors.newFixedThreadPool(INSTANCES);
        try (HikariDataSource pool = JdbcBackendFactory.pool(connection, INSTANCES)) {
            pool.setMinimumIdle(INSTANCES);
            pool.setConnectionTimeout(10_000);
            List<String> failures = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                String table = "race_" + dialect.name().toLowerCase() + "_" + round;
                CyclicBarrier start = new CyclicBarrier(INSTANCES);
                List<Future<?>> starts = new ArrayList<>();
                for (int instance = 0; instance < INSTANCES; instance++) {
                    starts.add(instances.submit(() -> {
                        JdbcLockBackend.Builder builder = JdbcLockBackend.builder(pool).tableName(table).dialect(dialect)
                                .createSchema(true).cleanupInterval(Duration.ZERO);
                        start.await(30, TimeUnit.SECONDS);
                        builder.build().close();
                        return null;
                    }));
                }
                for (Future<?> instance : starts) {
                    try {
                        instance.get(2, TimeUnit.MINUTES);
                    } catch (java.util.concurrent.ExecutionException e) {
                        failures.add(table + ": " + e.getCause());
                    }
                }
                try (JdbcLockBackend backend = JdbcLockBackend.builder(pool).tableName(table).dialect(dialect)
                        .cleanupInterval(Duration.ZERO).build()) {
                    assertThat(backend.tryAcquire(LockKind.EXCLUSIVE, "k", "owner-" + round, 10_000))
                            .as("the schema of %s works", table).isInstanceOf(AcquireResult.Acquired.class);
                }
            }
            assertThat(failures).as("starts that failed out of %d rounds of %d concurrent starts", ROUNDS, INSTANCES)
                    .isEmpty();
        } finally {
            instances.shutdownNow();
        }
    }
}
