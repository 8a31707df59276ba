package dev.dlock.testkit;

import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The recorder passes every call and every capability of the store SPI on to the real store it wraps: a capability
 * left to the interface's default would silently turn that feature off in every engine test built on it.
 */
class RecordingBackendTest {

    @Test
    void overridesEveryMethodOfTheStoreSpiSoThatNoneFallsBackToTheDefault() {
        List<String> notForwarded = Arrays.stream(LockBackend.class.getDeclaredMethods())
                .filter(method -> !Modifier.isPrivate(method.getModifiers()) && !Modifier.isStatic(method.getModifiers())
                        && !method.isSynthetic())
                .filter(method -> !overriddenByRecorder(method))
                .map(method -> method.getName() + Arrays.toString(method.getParameterTypes()))
                .sorted()
                .toList();
        assertThat(notForwarded).as("LockBackend methods RecordingBackend leaves to the interface").isEmpty();
    }

    @Test
    void aManagerOnTheRecorderHandsAnExclusiveLeaseStraightToTheNextLocalThread() throws Exception {
        RecordingBackend store = new RecordingBackend(new InMemoryLockBackend());
        try (LockManager locks = LockManager.builder(store).build()) {
            LockHandle first = locks.acquire("k", Duration.ofSeconds(5));
            long firstToken = first.fencingToken();
            CompletableFuture<Long> next = new CompletableFuture<>();
            Thread successor = new Thread(() -> {
                long token;
                try (LockHandle lock = locks.acquire("k", Duration.ofSeconds(30))) {
                    token = lock.fencingToken();
                } catch (RuntimeException | Error e) {
                    next.completeExceptionally(e);
                    return;
                }
                // Completed once the handle is closed: the count of releases below includes the successor's.
                next.complete(token);
            }, "successor");
            successor.setDaemon(true);
            successor.start();
            awaitTrue(Duration.ofSeconds(10), () -> waitsForTheKeysTurn(successor));
            first.close();
            long nextToken = next.get(30, TimeUnit.SECONDS);

            SoftAssertions softly = new SoftAssertions();
            softly.assertThat(locks.handsOffLocally()).as("the manager hands off locally").isTrue();
            softly.assertThat(nextToken).as("the successor's token").isGreaterThan(firstToken);
            softly.assertThat(store.handOffs).as("hand-offs sent").hasValue(1);
            softly.assertThat(store.acquires).as("acquisitions sent: the successor's came from the hand-off").hasValue(1);
            softly.assertThat(store.releases).as("releases sent: only the successor's, the first passed the key on").hasValue(1);
            softly.assertAll();
        }
    }

    private static boolean overriddenByRecorder(Method method) {
        try {
            RecordingBackend.class.getDeclaredMethod(method.getName(), method.getParameterTypes());
            return true;
        } catch (NoSuchMethodException e) {
            return false;
        }
    }

    /** Whether {@code thread} queues behind this JVM's holder of a key (the engine's local turn), asking the store nothing. */
    private static boolean waitsForTheKeysTurn(Thread thread) {
        return Arrays.stream(thread.getStackTrace())
                .anyMatch(frame -> frame.getClassName().equals("dev.dlock.core.LocalTurn") && frame.getMethodName().equals("enter"));
    }

    private static void awaitTrue(Duration timeout, BooleanSupplier condition) throws InterruptedException {
        long end = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            assertThat(System.nanoTime() - end).as("condition not met within %s", timeout).isNegative();
            Thread.sleep(5);
        }
    }
}
