package dev.dlock.shedlock;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.PostgresServer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The provider's contract on a real PostgreSQL (the database's clock counts the leases); every instance has a pool of its own. */
class PostgresDlockLockProviderTest extends DlockLockProviderContract {

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
    protected LockBackend newBackend() {
        return TestStores.connect(TestStores.connection(postgres));
    }

    @Override
    protected void dispose(LockBackend backend) {
        TestStores.dispose(backend);
    }
}
