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
    void aDistributedLocksTtlIsAFixedLeaseThatFreesTheKeyByItself() throws Exception {
        DistributedLock lock = registry.obtain("ttl");
        lock.lock(Duration.ofMillis(300));
        DistributedLock other = new DlockLockRegistry(elsewhere).obtain("ttl");
        assertThat(other.tryLock(30, TimeUnit.SECONDS)).as("another JVM once the TTL ran out, without an unlock").isTrue();
        other.unlock();
        assertThatThrownBy(lock::unlock).isInstanceOf(java.util.ConcurrentModificationException.class);

        assertThat(lock.tryLock(Duration.ofSeconds(1), Duration.ofSeconds(30))).isTrue();
        assertThatThrownBy(() -> registry.renewLock("ttl", Duration.ofSeconds(30)))
                .as("a fixed lease is not extended").isInstanceOf(UnsupportedOperationException.class);
        lock.unlock();
    }
}
