package dev.dlock.boot.integration;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.IntegrationLockRegistryAutoConfiguration;
import dev.dlock.core.LockManager;
import dev.dlock.integration.DlockLock;
import dev.dlock.integration.DlockLockRegistry;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.integration.leader.Context;
import org.springframework.integration.leader.DefaultCandidate;
import org.springframework.integration.support.leader.LockRegistryLeaderInitiator;
import org.springframework.integration.support.locks.DefaultLockRegistry;
import org.springframework.integration.support.locks.LockRegistry;

import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Lock;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Spring Integration's LockRegistry from dlock's lock manager: offered when the application has none, kept out of the
 * way of the application's own, absent without Spring Integration, without dlock's registry module or with dlock off;
 * and an application's unchanged {@code LockRegistryLeaderInitiator} leads on it, with a fencing token for its epoch.
 */
class IntegrationLockRegistryAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(DistributedLockAutoConfiguration.class,
                    IntegrationLockRegistryAutoConfiguration.class))
            .withPropertyValues("dlock.store=in-memory");

    @Test
    void anApplicationWithoutARegistryGetsDlocksOverItsLockManager() {
        runner.run(context -> {
            assertThat(context).hasSingleBean(LockRegistry.class).hasSingleBean(DlockLockRegistry.class);
            DlockLockRegistry registry = context.getBean(DlockLockRegistry.class);
            assertThat(registry.lockManager()).isSameAs(context.getBean(LockManager.class));
            assertThat(registry.registryKey()).isEqualTo(DlockLockRegistry.DEFAULT_REGISTRY_KEY);
            Lock lock = registry.obtain("order-7");
            lock.lock();
            try {
                assertThat(context.getBean(LockManager.class).admin().heldLocks()).as("held in the manager")
                        .anySatisfy(held -> assertThat(held.key()).isEqualTo("spring-integration:order-7"));
            } finally {
                lock.unlock();
            }
        });
    }

    @Test
    void anApplicationsOwnRegistryIsKept() {
        DefaultLockRegistry own = new DefaultLockRegistry();
        runner.withBean("lockRegistry", LockRegistry.class, () -> own)
                .run(context -> assertThat(context).doesNotHaveBean(DlockLockRegistry.class)
                        .getBean(LockRegistry.class).isSameAs(own));
    }

    @Test
    void withoutSpringIntegrationOrTheModuleOrDlockThereIsNoRegistryAndTheContextStarts() {
        runner.withClassLoader(new FilteredClassLoader(LockRegistry.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(DlockLockRegistry.class));
        runner.withClassLoader(new FilteredClassLoader(DlockLockRegistry.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockRegistry.class));
        runner.withPropertyValues("dlock.enabled=false")
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(LockRegistry.class));
    }

    /** The no-code-change path: the application's leader initiator, written for any LockRegistry bean, leads on dlock's. */
    @Test
    void anApplicationsLeaderInitiatorLeadsOnTheOfferedRegistry() {
        runner.withUserConfiguration(LeaderApplication.class).run(context -> {
            LeaderApplication.Events events = context.getBean(LeaderApplication.Events.class);
            String granted = events.queue.poll(30, TimeUnit.SECONDS);
            assertThat(granted).as("the candidate's first event").startsWith("granted ");
            assertThat(Long.parseLong(granted.substring("granted ".length()))).as("its epoch (fencing token)").isPositive();
            assertThat(context.getBean(LockRegistryLeaderInitiator.class).getContext().isLeader()).isTrue();

            context.getBean(LockRegistryLeaderInitiator.class).stop();
            assertThat(events.queue.poll(30, TimeUnit.SECONDS)).as("the event once stopped").isEqualTo("revoked");
        });
    }

    /** An application with a leader initiator over whatever LockRegistry bean there is. */
    @Configuration(proxyBeanMethods = false)
    static class LeaderApplication {

        /** What the candidate was told, in order. */
        static final class Events {
            final BlockingQueue<String> queue = new LinkedBlockingQueue<>();
        }

        @Bean
        Events events() {
            return new Events();
        }

        @Bean
        LockRegistryLeaderInitiator leaderInitiator(LockRegistry lockRegistry, Events events) {
            return new LockRegistryLeaderInitiator(lockRegistry, new DefaultCandidate("node-1", "leader") {
                @Override
                public void onGranted(Context context) {
                    // On the thread that holds the lock: the place to read the epoch.
                    DlockLock lock = ((DlockLockRegistry) lockRegistry).obtain(getRole());
                    events.queue.add("granted " + lock.fencingToken());
                }

                @Override
                public void onRevoked(Context context) {
                    events.queue.add("revoked");
                }
            });
        }
    }
}
