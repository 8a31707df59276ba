package dev.dlock.memcached;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Optional;

import org.junit.jupiter.api.Test;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;

/**
 * Why the memcached store is efficiency only: memcached evicts items it needs the memory of, a held lock among
 * them, and tells no one. A server with 2 MB (memcached's least) is filled with items of the lock's own size
 * class until the held lock is evicted; another owner then takes the key while its holder still believes it
 * holds it, and the holder learns of it only at its release.
 */
class MemcachedEvictionTest {

    private static final Logger log = LoggerFactory.getLogger(MemcachedEvictionTest.class);

    /** Enough items to push a held lock out of 2 MB several times over; the test fails if it survives them. */
    private static final int MOST_FILLER_ITEMS = 200_000;
    private static final int ROUND = 2_000;

    @Test
    void anEvictionTakesAHeldLockAwaySilentlyAndAnotherOwnerGetsTheKey() {
        String key = "eviction:victim";
        try (MemcachedServer memcached = MemcachedServer.start(2);
             LockBackend holderStore = MemcachedLockBackend.builder(memcached.address()).build();
             LockBackend otherStore = MemcachedLockBackend.builder(memcached.address()).build();
             // A 60 s watchdog lease: no renewal touches the lock while the cache fills.
             LockManager holder = LockManager.builder(holderStore).leaseTime(Duration.ofSeconds(60)).build();
             LockManager other = LockManager.builder(otherStore).build()) {
            LockHandle lock = holder.acquire(key, Duration.ZERO);
            String item = new MemcachedKeys(MemcachedLockBackend.DEFAULT_KEY_PREFIX).lock(key);
            assertThat(other.tryAcquire(key)).as("held before the cache fills").isEmpty();

            int filled = 0;
            while (memcached.has(item)) {
                assertThat(filled).as("filler items written while the lock stayed in memcached").isLessThan(MOST_FILLER_ITEMS);
                memcached.fillBeside(item, filled, ROUND);
                filled += ROUND;
            }
            long evictions = memcached.stat("evictions");
            log.info("The held lock was evicted after {} filler items; memcached evicted {} items", filled, evictions);
            assertThat(evictions).as("items memcached evicted").isPositive();

            Optional<LockHandle> taken = other.tryAcquire(key);
            assertThat(taken).as("the key, taken by another owner after the eviction").isPresent();
            assertThat(lock.isHeld()).as("the holder still believes it holds the key: nothing told it").isTrue();
            assertThatThrownBy(lock::close).as("the holder learns it only at release")
                    .isInstanceOf(LockLostException.class).hasMessageContaining(key);
            taken.get().close();
        }
    }
}
