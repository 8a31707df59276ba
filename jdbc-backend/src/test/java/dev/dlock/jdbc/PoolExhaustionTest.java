package dev.dlock.jdbc;

import java.sql.Connection;
import java.time.Duration;
import java.util.concurrent.TimeUnit;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockManager;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** An exhausted pool fails an acquire within the pool's connection timeout, not the wait time, and leaves nothing held. */
class PoolExhaustionTest {

    @Test
    void anExhaustedPoolFailsTheAcquireWithinThePoolTimeout() throws Exception {
        String url = "jdbc:h2:mem:dlock-pool-exhaustion;DB_CLOSE_DELAY=-1";
        try (HikariDataSource pool = JdbcBackendFactory.pool(JdbcBackendFactory.connection(url, "sa", ""), 1);
             JdbcLockBackend backend = JdbcLockBackend.builder(pool).createSchema(true).cleanupInterval(Duration.ZERO).build();
             LockManager locks = LockManager.builder(backend).build()) {
            try (Connection taken = pool.getConnection()) {
                long start = System.nanoTime();
                assertThatThrownBy(() -> locks.acquire("exhausted", Duration.ofSeconds(30)))
                        .isInstanceOf(LockBackendException.class).hasMessageContaining("exhausted");
                assertThat(System.nanoTime() - start).as("the pool's 5 s timeout, not the 30 s wait")
                        .isLessThan(TimeUnit.SECONDS.toNanos(10));
                assertThat(taken.isValid(1)).isTrue();
            }
            assertThat(locks.admin().heldLocks()).isEmpty();
            assertThat(locks.tryAcquire("exhausted")).as("works once a connection is free").isPresent().get().satisfies(h -> h.close());
        }
    }
}
