package dev.dlock.aspect.it;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import dev.dlock.annotation.DistributedLock;
import reactor.core.publisher.Flux;
import reactor.core.publisher.Mono;
import reactor.core.scheduler.Scheduler;
import reactor.core.scheduler.Schedulers;

/**
 * 1,000 locked {@code Mono}s on 10 keys, subscribed on a 4-thread scheduler, against a real Redis: every
 * one runs, no two on one key at once, and a sampler of the scheduler's threads never finds one of
 * them in dlock's waiting code (the local queue, the pause between store attempts) — the waits are
 * futures and timers, not threads. Brief monitor contention elsewhere (class loading, a bean lookup) is
 * not waiting for a lock and is not counted.
 */
class ReactiveNonBlockingTest {

    private static final int CALLS = 1_000;
    private static final int KEYS = 10;
    /** The engine's methods in which a caller's thread waits for a lock. */
    private static final List<String> WAITING_METHODS = List.of(
            "dev.dlock.core.LocalTurn.enter", "dev.dlock.core.KeyNotices.awaitNotices",
            "dev.dlock.core.Acquisition.block", "dev.dlock.core.Acquisition.enterTurn");

    /** A reactive service whose sections per key must never overlap. */
    public static class Inventory {
        private final String run = UUID.randomUUID().toString();
        private final Map<Integer, AtomicInteger> inside = new ConcurrentHashMap<>();
        private final AtomicInteger overlaps = new AtomicInteger();

        /** The unique part of this run's keys. */
        public String run() {
            return run;
        }

        @DistributedLock(name = "reserve", key = "@inventory.run() + ':' + (#item % 10)", waitTime = "60s")
        public Mono<Integer> reserve(int item) {
            AtomicInteger section = inside.computeIfAbsent(item % KEYS, k -> new AtomicInteger());
            return Mono.defer(() -> {
                if (section.incrementAndGet() > 1) {
                    overlaps.incrementAndGet();
                }
                return Mono.delay(Duration.ofMillis(1)).thenReturn(item)
                        // Before the completion travels on (doFinally would run after it, once the lock is already released).
                        .doOnTerminate(section::decrementAndGet);
            });
        }

        int overlaps() {
            return overlaps.get();
        }
    }

    @Configuration(proxyBeanMethods = false)
    static class Services {
        @Bean
        Inventory inventory() {
            return new Inventory();
        }
    }

    @Test
    void lockedMonosWaitWithoutBlockingTheSchedulersThreads() throws Exception {
        Scheduler callers = Schedulers.newParallel("reactive-caller", 4);
        List<String> blockedSamples = new CopyOnWriteArrayList<>();
        AtomicBoolean sampling = new AtomicBoolean(true);
        Thread sampler = new Thread(() -> sampleCallers(sampling, blockedSamples), "blocked-thread-sampler");
        try (AnnotationConfigApplicationContext context = TestContexts.start(Services.class)) {
            Inventory inventory = context.getBean(Inventory.class);
            sampler.start();
            List<Integer> reserved = Flux.range(0, CALLS)
                    .flatMap(item -> inventory.reserve(item).subscribeOn(callers), CALLS)
                    .collectList()
                    .block(Duration.ofSeconds(120));
            sampling.set(false);
            sampler.join(5_000);

            assertThat(reserved).hasSize(CALLS).doesNotHaveDuplicates();
            assertThat(inventory.overlaps()).as("sections that overlapped on a key").isZero();
            assertThat(blockedSamples).as("scheduler threads found parked inside dlock").isEmpty();
        } finally {
            sampling.set(false);
            callers.dispose();
        }
    }

    /** Samples the callers' threads until told to stop; records each one found in a method where the engine waits for a lock. */
    private static void sampleCallers(AtomicBoolean sampling, List<String> blocked) {
        while (sampling.get()) {
            for (Map.Entry<Thread, StackTraceElement[]> entry : Thread.getAllStackTraces().entrySet()) {
                if (!entry.getKey().getName().startsWith("reactive-caller")) {
                    continue;
                }
                for (StackTraceElement frame : entry.getValue()) {
                    if (WAITING_METHODS.contains(frame.getClassName() + "." + frame.getMethodName())) {
                        blocked.add(entry.getKey().getName() + " " + entry.getKey().getState() + " in " + frame);
                        break;
                    }
                }
            }
            Thread.onSpinWait();
        }
    }
}
