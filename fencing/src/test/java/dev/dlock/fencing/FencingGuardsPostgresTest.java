package dev.dlock.fencing;

import dev.dlock.jdbc.PostgresServer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The fencing guards on a PostgreSQL server started for this class. */
class FencingGuardsPostgresTest extends FencingGuardsContract {

    private static PostgresServer postgres;

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

    @Override
    String jdbcUrl() {
        return postgres.jdbcUrl();
    }

    @Override
    String user() {
        return "postgres";
    }
}
