package dev.dlock.core;

import dev.dlock.testkit.RecordingBackend;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LockBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.TestInfo;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import java.util.function.Consumer;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the engine's tests share: one in-memory store per test on a clock the test can move forward,
 * managers over it (closed after the test), a unique key, and bounded waits for a condition.
 */
abstract class EngineTestSupport {

    /** The store's clock: real time plus whatever the test skipped ahead. */
    final AtomicLong skippedNanos = new AtomicLong();
    final InMemoryLockBackend store = InMemoryLockBackend.builder().clock(() -> System.nanoTime() + skippedNanos.get()).build();
    String key;
    private final List<LockManager> managers = new ArrayList<>();
    private final List<Thread> threads = new ArrayList<>();

    @BeforeEach
    void uniqueKey(TestInfo test) {
        key = test.getTestMethod().map(m -> m.getName()).orElse("test") + ":" + UUID.randomUUID();
    }

    @AfterEach
    void closeManagers() throws InterruptedException {
        for (Thread thread : threads) {
            thread.interrupt();
            thread.join(10_000);
        }
        managers.forEach(LockManager::close);
        store.close();
    }

    /** Lets every lease in the store run out now, as if {@code duration} had passed for the store only. */
    void skipStoreTime(Duration duration) {
        skippedNanos.addAndGet(duration.toNanos());
    }

    /** A manager over {@code backend}, closed after the test. */
    LockManager manager(LockBackend backend, Consumer<LockManager.Builder> config) {
        LockManager.Builder builder = LockManager.builder(backend);
        config.accept(builder);
        LockManager manager = builder.build();
        managers.add(manager);
        return manager;
    }

    /** A manager with default settings straight over the store: another application on the same store. */
    LockManager manager() {
        return manager(store, b -> { });
    }

    /**
     * A store wrapper that records (and can hold or break) what the engine sends; it declares no hand-off, so that
     * tests count plain releases (a test of hand-offs wraps the store with {@code new RecordingBackend(store)}).
     */
    RecordingBackend tapped() {
        return withoutHandOff(store);
    }

    /** {@code backend} in a recorder that declares no hand-off. */
    static RecordingBackend withoutHandOff(LockBackend backend) {
        RecordingBackend recorder = new RecordingBackend(backend);
        recorder.alterCapabilities(declared -> declared.withLocalHandOff(null));
        return recorder;
    }

    /** Starts {@code work} on a daemon thread that is interrupted and joined after the test. */
    Thread start(String name, Runnable work) {
        Thread thread = new Thread(work, name);
        thread.setDaemon(true);
        threads.add(thread);
        thread.start();
        return thread;
    }

    /**
     * Acquires with {@code request} on a thread of its own and returns once that thread queues for this JVM's turn on
     * the key; the future holds "took the key" (released again at once), or what the acquisition threw.
     */
    CompletableFuture<Object> queuedWaiter(LockManager locks, LockRequest request) {
        CompletableFuture<Object> waited = new CompletableFuture<>();
        Thread waiter = start("waiter", () -> {
            try (LockHandle taken = locks.acquire(request)) {
                waited.complete(taken.isHeld() ? "took the key" : "took a handle that is not held");
            } catch (RuntimeException e) {
                waited.complete(e);
            }
        });
        await("the waiter to queue for the key's turn", Duration.ofSeconds(10), () -> waitsForTheTurn(waiter) || waited.isDone());
        return waited;
    }

    /**
     * Makes {@code tapped}'s first acquisition fail at the client (a lost reply) without reaching the store; the test
     * lands its command later by running the supplier kept in the answer.
     */
    static AtomicReference<Supplier<AcquireResult>> failFirstAcquisitionAtTheClient(RecordingBackend tapped) {
        AtomicReference<Supplier<AcquireResult>> lateCommand = new AtomicReference<>();
        tapped.aroundAcquire(call -> {
            if (lateCommand.compareAndSet(null, call)) {
                throw new LockBackendException("the client gave up on the reply (test)", null);
            }
            return call.get();
        });
        return lateCommand;
    }

    /** Polls {@code condition} every 5 ms until it holds; fails naming {@code what} after {@code timeout}. */
    static void await(String what, Duration timeout, BooleanSupplier condition) {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - end > 0) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError("interrupted waiting for " + what, e);
            }
        }
    }

    /** Waits up to 10 s for {@code latch} on a thread the engine is holding in a store call; keeps an interrupt. */
    static void awaitQuietly(CountDownLatch latch) {
        try {
            if (!latch.await(10, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released the latch");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** True while {@code thread} is parked in {@link LocalTurn#enter}, queued for this JVM's turn on a key. */
    static boolean waitsForTheTurn(Thread thread) {
        Thread.State state = thread.getState();
        if (state != Thread.State.WAITING && state != Thread.State.TIMED_WAITING) {
            return false;
        }
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals(LocalTurn.class.getName()) && frame.getMethodName().equals("enter")) {
                return true;
            }
        }
        return false;
    }

    /** Fails unless {@code locks} can take {@code key} at once; releases it again. */
    static void assertFree(LockManager locks, String key, String why) {
        Optional<LockHandle> taken = locks.tryAcquire(key);
        assertThat(taken).as(why).isPresent();
        taken.get().close();
    }

    /** How many threads wait for a key's local turn now (inside {@code LocalTurn.enter}), in every manager of this JVM. */
    static int threadsWaitingForTheTurn() {
        int waiting = 0;
        for (StackTraceElement[] stack : Thread.getAllStackTraces().values()) {
            if (isIn(stack, "enter")) {
                waiting++;
            }
        }
        return waiting;
    }

    /** Whether {@code thread} is inside the local turn's method {@code method} now. */
    static boolean isInGate(Thread thread, String method) {
        return isIn(thread.getStackTrace(), LocalTurn.class, method);
    }

    /** Whether {@code thread} is inside {@code type}'s method {@code method} now. */
    static boolean isIn(Thread thread, Class<?> type, String method) {
        return isIn(thread.getStackTrace(), type, method);
    }

    private static boolean isIn(StackTraceElement[] stack, String method) {
        return isIn(stack, LocalTurn.class, method);
    }

    private static boolean isIn(StackTraceElement[] stack, Class<?> type, String method) {
        for (StackTraceElement frame : stack) {
            if (frame.getClassName().equals(type.getName()) && frame.getMethodName().equals(method)) {
                return true;
            }
        }
        return false;
    }

    /** The lease behind a handle (the engine's own record, shared by re-entrant handles). */
    static Lease leaseOf(LockHandle handle) {
        return ((LeaseHandle) handle).lease();
    }
}
