package dev.dlock.boot.jdbc;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockStartupException;
import dev.dlock.boot.JdbcLockStoreAutoConfiguration;
import dev.dlock.boot.JdbcStoreProperties;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.jdbc.PostgresServer;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.sql.init.DatabaseInitializationMode;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code dlock.jdbc.initialize-schema} follows Spring Boot's convention ({@code embedded}, {@code always},
 * {@code never}), runs after Flyway's migrations, survives a fleet of instances starting at once on a fresh
 * PostgreSQL, and a refused creation names the database's answer, not the credentials. On a PostgreSQL server
 * this class starts, one fresh database per test.
 */
class JdbcSchemaInitializationTest {

    private static final int INSTANCES = 4;
    private static final int ROUNDS = 6;

    private static PostgresServer postgres;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(JdbcLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
            .withPropertyValues("dlock.store=jdbc");

    @BeforeAll
    static void startPostgres() {
        postgres = PostgresServer.start();
    }

    @AfterAll
    static void stopPostgres() {
        if (postgres != null) {
            postgres.close();
        }
    }

    /** Boot's default for its own schemas: created on an embedded database (in-memory H2), left alone on a server. */
    @Test
    void byDefaultTheSchemaIsCreatedOnAnEmbeddedDatabaseOnly() throws SQLException {
        runner.withBean(DataSource.class, () -> h2("embedded-default")).run(context -> {
            assertThat(context).hasNotFailed();
            try (LockHandle lock = context.getBean(LockManager.class).acquire("embedded", Duration.ZERO)) {
                assertThat(lock.isHeld()).isTrue();
            }
        });
        try (HikariDataSource pool = pool(freshDatabase("server_default"), "postgres")) {
            runner.withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .run(context -> assertThat(context.getStartupFailure()).as("the start on a server without the table")
                            .hasMessageContaining("dlock's lock table dlock_locks is missing")
                            .hasMessageContaining("dlock.jdbc.initialize-schema=always"));
        }
    }

    /** {@code never} leaves even an embedded database alone. */
    @Test
    void neverCreatesNothing() {
        runner.withBean(DataSource.class, () -> h2("embedded-never")).withPropertyValues("dlock.jdbc.initialize-schema=never")
                .run(context -> assertThat(context.getStartupFailure()).hasMessageContaining("dlock's lock table dlock_locks is missing"));
    }

    /** The deprecated {@code create-schema} still works, as {@code always} (true) or {@code never} (false); the new property wins. */
    @Test
    void theDeprecatedCreateSchemaMapsToAlwaysOrNever() throws SQLException {
        try (HikariDataSource pool = pool(freshDatabase("deprecated"), "postgres")) {
            runner.withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.jdbc.create-schema=true").run(context -> {
                        assertThat(context).hasNotFailed();
                        assertThat(context.getBean(JdbcStoreProperties.class).getInitializeSchema())
                                .isEqualTo(DatabaseInitializationMode.ALWAYS);
                    });
        }
        runner.withBean(DataSource.class, () -> h2("deprecated-false")).withPropertyValues("dlock.jdbc.create-schema=false")
                .run(context -> assertThat(context.getStartupFailure()).hasMessageContaining("dlock's lock table dlock_locks is missing"));
        runner.withBean(DataSource.class, () -> h2("both-set"))
                .withPropertyValues("dlock.jdbc.create-schema=false", "dlock.jdbc.initialize-schema=always")
                .run(context -> assertThat(context).hasNotFailed());
    }

    /**
     * Instances starting at once on a fresh database, each with {@code initialize-schema=always}: every one starts.
     * Each round lines the instances up on a barrier in front of the schema creation's first connection, so they create
     * the sequence and the table at the same moment; PostgreSQL used to fail some of them with {@code duplicate key
     * value violates unique constraint "pg_type_typname_nsp_index"}.
     */
    @Test
    void instancesStartingAtOnceOnAFreshDatabaseAllStart() throws Exception {
        ExecutorService starts = Executors.newFixedThreadPool(INSTANCES);
        List<HikariDataSource> pools = new ArrayList<>();
        try {
            List<String> failures = new ArrayList<>();
            for (int round = 0; round < ROUNDS; round++) {
                String url = freshDatabase("fleet_" + round);
                CyclicBarrier startingLine = new CyclicBarrier(INSTANCES);
                List<Future<Throwable>> instances = new ArrayList<>();
                for (int instance = 0; instance < INSTANCES; instance++) {
                    HikariDataSource pool = pool(url, "postgres");
                    pools.add(pool);
                    pool.getConnection().close();
                    DataSource lined = new StartingLine(pool, startingLine);
                    instances.add(starts.submit(() -> {
                        Throwable[] failure = new Throwable[1];
                        runner.withBean(DataSource.class, () -> lined)
                                .withPropertyValues("dlock.jdbc.initialize-schema=always", "dlock.jdbc.dialect=postgresql")
                                .run(context -> failure[0] = context.getStartupFailure());
                        return failure[0];
                    }));
                }
                for (Future<Throwable> instance : instances) {
                    Throwable failure = instance.get(2, TimeUnit.MINUTES);
                    if (failure != null) {
                        failures.add("round " + round + ": " + failure);
                    }
                }
            }
            assertThat(failures).as("failed starts of %d rounds of %d instances starting at once", ROUNDS, INSTANCES).isEmpty();
        } finally {
            starts.shutdownNow();
            pools.forEach(HikariDataSource::close);
        }
    }

    /**
     * A database user that may not create tables: the failure says so, with the database's words, and points to the
     * DDL and {@code initialize-schema=never} — not to the DataSource's URL and password, which are right.
     */
    @Test
    void aRefusedCreationNamesTheDatabasesAnswerNotTheCredentials() throws SQLException {
        String url = freshDatabase("restricted");
        try (Connection admin = DriverManager.connect(url, "postgres"); Statement statement = admin.createStatement()) {
            statement.execute("DROP ROLE IF EXISTS app_user");
            statement.execute("CREATE ROLE app_user LOGIN");
            statement.execute("REVOKE CREATE ON SCHEMA public FROM PUBLIC");
        }
        try (HikariDataSource pool = pool(url, "app_user")) {
            runner.withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .withPropertyValues("dlock.jdbc.initialize-schema=always").run(context -> {
                        assertThat(context).hasFailed();
                        DistributedLockStartupException failure = startupException(context.getStartupFailure());
                        assertThat(failure.getDescription())
                                .contains("may not create dlock's lock table dlock_locks")
                                .contains("permission denied for schema public");
                        assertThat(failure.getAction()).contains("dev/dlock/jdbc/schema-<dialect>.sql")
                                .contains("dlock.jdbc.initialize-schema=never")
                                .doesNotContain("password").doesNotContain("spring.datasource.url");
                    });
        }
    }

    /**
     * Flyway migrates first, then dlock creates its table: Flyway refuses a schema that already holds a table but no
     * history table, which is what it met when the lock store, built early for the {@code @DistributedLock} aspect,
     * created its table before Flyway ran.
     */
    @Test
    void flywayMigratesBeforeDlockCreatesItsTable() throws SQLException {
        String url = freshDatabase("flyway");
        try (HikariDataSource pool = pool(url, "postgres")) {
            runner.withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, flywayAutoConfiguration()))
                    .withBean(DataSource.class, () -> pool, definition -> definition.setDestroyMethodName(""))
                    .withBean(CounterApplication.Counter.class)
                    .withPropertyValues("dlock.jdbc.initialize-schema=always", "spring.flyway.locations=classpath:dlock-flyway")
                    .run(context -> {
                        assertThat(context).hasNotFailed();
                        context.getBean(CounterApplication.Counter.class).increment("after-flyway");
                    });
        }
        try (Connection connection = DriverManager.connect(url, "postgres"); Statement statement = connection.createStatement();
             ResultSet applied = statement.executeQuery("SELECT version FROM flyway_schema_history WHERE success")) {
            assertThat(applied.next()).as("Flyway's migration applied").isTrue();
            assertThat(applied.getString(1)).isEqualTo("1");
        }
    }

    /** The line's FlywayAutoConfiguration (Boot 4 moved it to its own module). */
    private static Class<?> flywayAutoConfiguration() {
        for (String name : List.of("org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration",
                "org.springframework.boot.autoconfigure.flyway.FlywayAutoConfiguration")) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // the other Boot line's
            }
        }
        throw new IllegalStateException("no FlywayAutoConfiguration on the class path");
    }

    private static DistributedLockStartupException startupException(Throwable failure) {
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof DistributedLockStartupException startup) {
                return startup;
            }
        }
        throw new AssertionError("no DistributedLockStartupException in " + failure, failure);
    }

    /** A new, empty database on the server; its JDBC URL. */
    private static String freshDatabase(String name) throws SQLException {
        try (Connection admin = postgres.admin(); Statement statement = admin.createStatement()) {
            statement.execute("DROP DATABASE IF EXISTS " + name);
            statement.execute("CREATE DATABASE " + name);
        }
        return postgres.jdbcUrl().replaceFirst("/postgres$", "/" + name);
    }

    private static HikariDataSource pool(String url, String user) {
        HikariDataSource pool = new HikariDataSource();
        pool.setJdbcUrl(url);
        pool.setUsername(user);
        pool.setConnectionTimeout(5_000);
        pool.setMaximumPoolSize(4);
        return pool;
    }

    /** An in-memory H2 database of its own. */
    private static DataSource h2(String name) {
        JdbcDataSource dataSource = new JdbcDataSource();
        dataSource.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        return dataSource;
    }

    /** Plain connections for the test's own statements. */
    private static final class DriverManager {
        static Connection connect(String url, String user) throws SQLException {
            return java.sql.DriverManager.getConnection(url, user, "");
        }
    }

    /** An instance's pool whose first connection waits until every instance of the round asks for one. */
    private static final class StartingLine extends DelegatingDataSource {

        private final CyclicBarrier barrier;
        private final AtomicBoolean lined = new AtomicBoolean();

        StartingLine(DataSource pool, CyclicBarrier barrier) {
            super(pool);
            this.barrier = barrier;
        }

        @Override
        public Connection getConnection() throws SQLException {
            if (lined.compareAndSet(false, true)) {
                try {
                    barrier.await(60, TimeUnit.SECONDS);
                } catch (Exception e) {
                    throw new SQLException("the instances did not line up", e);
                }
            }
            return super.getConnection();
        }
    }
}
