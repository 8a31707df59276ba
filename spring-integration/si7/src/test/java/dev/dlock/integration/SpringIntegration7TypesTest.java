package dev.dlock.integration;

import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.support.GenericApplicationContext;
import org.springframework.core.ResolvableType;
import org.springframework.integration.support.locks.DistributedLock;
import org.springframework.integration.support.locks.ExpirableLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;
import org.springframework.integration.support.locks.RenewableLockRegistry;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * On Spring Integration 7 the registry is typed as its own distributed registries are ({@code RedisLockRegistry},
 * {@code JdbcLockRegistry}: registries of {@link DistributedLock}s), so code and injection points written for them
 * take it, and its locks take the TTL variants of {@link DistributedLock}.
 */
class SpringIntegration7TypesTest {

    private final LockManager locks = LockManager.builder(new InMemoryLockBackend()).build();
    private final LockManager elsewhere = LockManager.builder(locks.backend()).instanceId("elsewhere").build();
    private final DlockLockRegistry registry = new DlockLockRegistry(locks);

    @AfterEach
    void close() {
        locks.close(Duration.ZERO);
        elsewhere.close(Duration.ZERO);
    }

    @Test
    void theRegistryIsWhereSpringIntegrationsDistributedRegistriesGo() {
        ExpirableLockRegistry<DistributedLock> expirable = registry;
        RenewableLockRegistry<DistributedLock> renewable = registry;
        assertThat(expirable).isSameAs(renewable);

        try (GenericApplicationContext context = new GenericApplicationContext()) {
            context.registerBean("lockRegistry", DlockLockRegistry.class, () -> registry);
            context.refresh();
            ResolvableType typedAsRedisLockRegistry = ResolvableType.forClassWithGenerics(LockRegistry.class, DistributedLock.class);
            assertThat(context.getBeanProvider(typedAsRedisLockRegistry).getIfUnique()).as("a LockRegistry<DistributedLock>")
                    .isSameAs(registry);
        }
    }

    @Test
    void aDistributedLocksTtlIsAFixedLeaseThatFreesTheKeyByItselfUnlessRenewed() throws Exception {
        DistributedLock lock = registry.obtain("ttl");
        lock.lock(Duration.ofMillis(300));
        DistributedLock other = new DlockLockRegistry(elsewhere).obtain("ttl");
        assertThat(other.tryLock(30, TimeUnit.SECONDS)).as("another JVM once the TTL ran out, without an unlock").isTrue();
        other.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(java.util.ConcurrentModificationException.class);

        // Spring Integration 7's renewLock(key, ttl), through its own interface: the TTL hold is kept for the new TTL.
        RenewableLockRegistry<DistributedLock> renewable = registry;
        Duration ttl = Duration.ofMillis(500);
        assertThat(lock.tryLock(Duration.ofSeconds(1), ttl)).isTrue();
        renewable.renewLock("ttl", Duration.ofSeconds(30));
        assertThat(other.tryLock(ttl.multipliedBy(5).toMillis(), TimeUnit.MILLISECONDS))
                .as("another JVM within five of the old TTLs after renewLock(key, ttl)").isFalse();
        lock.unlock();
        assertThat(other.tryLock(5, TimeUnit.SECONDS)).as("another JVM after the unlock").isTrue();
        other.unlock();
    }
}
