package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.DriverManager;
import java.util.UUID;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.StoredHolder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Who holds a key and a forced release on the dialects besides PostgreSQL ({@link PostgresHolderInspectionTest}): H2,
 * MariaDB, and MariaDB through the MySQL token path (no sequence).
 */
class JdbcDialectsHolderInspectionTest {

    private static final JdbcBackendFactory FACTORY = new JdbcBackendFactory();

    private static MariaDbServer mariaDb;
    private static Connection h2KeepAlive;

    @BeforeAll
    static void startDatabases() throws Exception {
        mariaDb = MariaDbServer.start();
        JdbcBackendFactory.createSchema(MariaDbContractTest.connectionOf(mariaDb));
        JdbcBackendFactory.createSchema(MariaDbMySqlPathContractTest.connectionOf(mariaDb));
        h2KeepAlive = DriverManager.getConnection(h2Url(), "sa", "");
        JdbcBackendFactory.createSchema(JdbcBackendFactory.connection(h2Url(), "sa", ""));
    }

    @AfterAll
    static void stopDatabases() throws Exception {
        if (h2KeepAlive != null) {
            h2KeepAlive.close();
        }
        if (mariaDb != null) {
            mariaDb.close();
        }
    }

    private static String h2Url() {
        return "jdbc:h2:mem:dlock-holders;DB_CLOSE_DELAY=-1";
    }

    @Test
    void h2() {
        holdersAndForcedRelease(JdbcBackendFactory.connection(h2Url(), "sa", ""));
    }

    @Test
    void mariaDb() {
        holdersAndForcedRelease(MariaDbContractTest.connectionOf(mariaDb));
    }

    @Test
    void mySqlTokenPath() {
        holdersAndForcedRelease(MariaDbMySqlPathContractTest.connectionOf(mariaDb));
    }

    private static void holdersAndForcedRelease(String connection) {
        String key = "holders:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection);
        try {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
            long token = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, key, "worker-7/main/kz0/id:1", 60_000))
                    .fencingToken();

            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).singleElement().satisfies(holder -> {
                assertThat(LockHolder.of(holder).instance()).isEqualTo("worker-7");
                assertThat(holder.remainingTtlMillis()).isBetween(1L, 60_001L);
            });
            assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, key)).extracting(StoredHolder::owner)
                    .containsExactly("worker-7/main/kz0/id:1");

            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "worker-7/main/kz0/id:1", token)).isEqualTo(ReleaseResult.NOT_OWNER);
            AcquireResult next = backend.tryAcquire(LockKind.EXCLUSIVE, key, "next", 60_000);
            assertThat(((AcquireResult.Acquired) next).fencingToken()).isGreaterThan(token);
        } finally {
            FACTORY.dispose(backend);
        }
    }
}
