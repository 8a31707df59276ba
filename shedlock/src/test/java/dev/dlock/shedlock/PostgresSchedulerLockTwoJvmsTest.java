package dev.dlock.shedlock;

import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** ShedLock's scheduled jobs in two JVMs on a real PostgreSQL (the database's clock counts the leases). */
class PostgresSchedulerLockTwoJvmsTest extends SchedulerLockTwoJvmsContract {

    private static PostgresServer postgres;

    @BeforeAll
    static void startPostgres() {
        postgres = TestStores.startPostgres();
    }

    @AfterAll
    static void stopPostgres() {
        if (postgres != null) {
            postgres.close();
        }
    }

    @Override
    protected String store() {
        return TestStores.connection(postgres);
    }
}
