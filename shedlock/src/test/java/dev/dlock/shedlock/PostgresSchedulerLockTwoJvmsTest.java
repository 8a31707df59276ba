package dev.dlock.shedlock;

import dev.dlock.jdbc.PostgresServer;
import dev.dlock.testkit.ServerExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** ShedLock's scheduled jobs in two JVMs on a real PostgreSQL (the database's clock counts the leases). */
class PostgresSchedulerLockTwoJvmsTest extends SchedulerLockTwoJvmsContract {

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", TestStores::startPostgres);

    @Override
    protected String store() {
        return TestStores.connection(POSTGRES.server());
    }
}
