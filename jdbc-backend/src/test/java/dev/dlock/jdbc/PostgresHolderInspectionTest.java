package dev.dlock.jdbc;

import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.testkit.OtherJvmHolder;
import dev.dlock.testkit.ServerExtension;

import static org.assertj.core.api.Assertions.assertThat;

/** Who holds a key in a PostgreSQL lock table, seen from another JVM than the holder's, and an operator's forced release. */
class PostgresHolderInspectionTest {

    @RegisterExtension
    static final ServerExtension<PostgresServer> POSTGRES = new ServerExtension<>("PostgreSQL server", PostgresServer::start);

    private static PostgresServer postgres;
    private static String connection;
    private static final JdbcBackendFactory FACTORY = new JdbcBackendFactory();

    @BeforeAll
    static void prepareServer() {
        postgres = POSTGRES.server();
        connection = PostgresContractTest.connectionOf(postgres);
        PostgresContractTest.createSchema(connection);
    }

    @Test
    void aHolderInAnotherJvmIsNamedAndAForcedReleaseFreesTheKeyAndTellsIt() throws Exception {
        String key = "orders:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection);
        try (LockManager locks = LockManager.builder(backend).instanceId("operator").build();
             OtherJvmHolder child = OtherJvmHolder.start(JdbcBackendFactory.class, connection, key, LockKind.EXCLUSIVE,
                     "worker-7", "checkout-worker-3", Duration.ofSeconds(3))) {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();

            List<StoredHolder> stored = inspection.holders(LockKind.EXCLUSIVE, key);

            assertThat(stored).hasSize(1);
            LockHolder holder = LockHolder.of(stored.get(0));
            assertThat(holder.instance()).isEqualTo("worker-7");
            assertThat(holder.holder()).isEqualTo("checkout-worker-3");
            assertThat(holder.acquiredAt()).isBetween(Instant.now().minusSeconds(120), Instant.now().plusSeconds(5));
            assertThat(holder.leaseRemaining()).isPositive().isLessThanOrEqualTo(Duration.ofSeconds(3));

            // A waiter of this JVM, listening on the key's channel before the forced release notifies it.
            CompletableFuture<Long> waiter = CompletableFuture.supplyAsync(() -> {
                try (LockHandle handle = locks.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(60)).build())) {
                    return handle.fencingToken();
                }
            });
            List<StoredHolder> removed = inspection.forceRelease(LockKind.EXCLUSIVE, key);

            assertThat(removed).extracting(StoredHolder::owner).containsExactly(stored.get(0).owner());
            assertThat(waiter.get(60, TimeUnit.SECONDS)).as("the waiter's token").isGreaterThan(child.fencingToken());
            assertThat(child.awaitExit(Duration.ofSeconds(60))).as("the child's exit code (42: told its lease was lost); its output:\n%s",
                    child.output()).isEqualTo(OtherJvmHolder.EXIT_LEASE_LOST);
        } finally {
            FACTORY.dispose(backend);
        }
    }

    @Test
    void holdersOfAFreeKeyAreNoneAndReadingThemExtendsNoLease() throws Exception {
        String key = "read-only:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection);
        try {
            HolderInspection inspection = backend.capabilities().holderInspection().orElseThrow();
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
            assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, key)).isEmpty();

            AcquireResult taken = backend.tryAcquire(LockKind.EXCLUSIVE, key, "a/b/0/c:1", 60_000);
            assertThat(taken).isInstanceOf(AcquireResult.Acquired.class);
            String before = expiresAt(key);

            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).singleElement()
                    .satisfies(h -> assertThat(h.owner()).isEqualTo("a/b/0/c:1"))
                    .satisfies(h -> assertThat(h.remainingTtlMillis()).isBetween(1L, 60_000L));
            assertThat(expiresAt(key)).as("expires_at after reading the holders").isEqualTo(before);

            // An expired lease is no holder, even before anyone takes the row over.
            try (Connection admin = postgres.admin()) {
                admin.createStatement().execute("UPDATE dlock_locks SET expires_at = clock_timestamp() - INTERVAL '1 second'"
                        + " WHERE lock_key = '" + key + "'");
            }
            assertThat(inspection.holders(LockKind.EXCLUSIVE, key)).isEmpty();
        } finally {
            FACTORY.dispose(backend);
        }
    }

    @Test
    void aForcedOutHolderIsToldItsLeaseWasLostWhenItReleases() {
        String key = "forced:" + UUID.randomUUID();
        LockBackend backend = FACTORY.create(connection);
        try {
            long token = ((AcquireResult.Acquired) backend.tryAcquire(LockKind.EXCLUSIVE, key, "holder", 60_000)).fencingToken();

            assertThat(backend.capabilities().holderInspection().orElseThrow().forceRelease(LockKind.EXCLUSIVE, key))
                    .extracting(StoredHolder::owner).containsExactly("holder");

            // With the row free at the holder's token, the release would read "released already": ALREADY_FREE.
            assertThat(backend.release(LockKind.EXCLUSIVE, key, "holder", token)).isEqualTo(ReleaseResult.NOT_OWNER);
            AcquireResult next = backend.tryAcquire(LockKind.EXCLUSIVE, key, "next", 60_000);
            assertThat(((AcquireResult.Acquired) next).fencingToken()).isGreaterThan(token);
        } finally {
            FACTORY.dispose(backend);
        }
    }

    private static String expiresAt(String key) throws SQLException {
        try (Connection admin = postgres.admin();
             PreparedStatement statement = admin.prepareStatement("SELECT expires_at::text FROM dlock_locks WHERE lock_key = ?")) {
            statement.setString(1, key);
            try (ResultSet row = statement.executeQuery()) {
                row.next();
                return row.getString(1);
            }
        }
    }
}
