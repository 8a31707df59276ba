package dev.dlock.shedlock;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.PostgresServer;
import dev.dlock.testkit.ServerExtension;
import org.junit.jupiter.api.extension.RegisterExtension;

/** The provider's contract on a real PostgreSQL (the database's clock counts the leases); every instance has a pool of its own. */
class PostgresDlockLockProviderTest extends DlockLockProviderContract {

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", TestStores::startPostgres);

    @Override
    protected LockBackend newBackend() {
        return TestStores.connect(TestStores.connection(POSTGRES.server()));
    }

    @Override
    protected void dispose(LockBackend backend) {
        TestStores.dispose(backend);
    }
}
