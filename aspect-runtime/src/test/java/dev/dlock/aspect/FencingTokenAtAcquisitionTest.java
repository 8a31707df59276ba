package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A locked method that reads its fencing token gets it from the acquisition's own store call, on a store that otherwise
 * issues it when first read (Redis; here the in-memory store built to do the same, each store call counted): from the
 * first call with {@code @DistributedLock(fencingToken = true)}, from the second call of a method seen reading it. A
 * method that never reads its token keeps taking the key without one.
 */
class FencingTokenAtAcquisitionTest {

    /** Locked methods that read their token through {@link LockContext}, as a fencing guard does, or never do. */
    public static class Ledger {
        private final Section section;

        public Ledger(Section section) {
            this.section = section;
        }

        @DistributedLock(key = "#id", fencingToken = true)
        public long declared(String id) throws InterruptedException {
            section.inside.countDown();
            section.leave.await(30, TimeUnit.SECONDS);
            return LockContext.current().fencingToken();
        }

        @DistributedLock(key = "#id")
        public long undeclared(String id) {
            return LockContext.current().fencingTokens().values().iterator().next();
        }

        @DistributedLock(key = "#id")
        public boolean neverReads(String id) {
            return LockContext.current().isHeld();
        }
    }

    /** Where a call of {@link Ledger#declared} tells it holds the key, and waits until told to leave. */
    static final class Section {
        final CountDownLatch inside = new CountDownLatch(1);
        volatile CountDownLatch leave = new CountDownLatch(0);
    }

    @Configuration(proxyBeanMethods = false)
    @EnableAspectJAutoProxy(proxyTargetClass = true)
    @EnableDistributedLocks
    static class Locking {
    }

    private final InMemoryLockBackend store = InMemoryLockBackend.builder().fencingTokensOnRequest(true).build();
    private final RecordingBackend backend = new RecordingBackend(store);
    private AnnotationConfigApplicationContext context;
    private final Section section = new Section();
    private Ledger ledger;
    private final String id = UUID.randomUUID().toString();

    @BeforeEach
    void start() {
        context = new AnnotationConfigApplicationContext();
        context.registerBean(LockManager.class, () -> LockManager.builder(backend).leaseTime(Duration.ofSeconds(3)).build());
        context.registerBean(Ledger.class, () -> new Ledger(section));
        context.register(Locking.class);
        context.refresh();
        ledger = context.getBean(Ledger.class);
    }

    @AfterEach
    void stop() {
        context.close();
        store.close();
    }

    @Test
    void aMethodDeclaredToReadItsTokenGetsItWithTheAcquisitionFromTheFirstCall() throws Exception {
        long first = ledger.declared(id);
        long second = ledger.declared(id);
        assertThat(second).as("tokens of two calls").isGreaterThan(first).isGreaterThan(0);
        assertThat(backend.issuances).as("store calls issuing a token of their own").hasValue(0);
        assertThat(backend.acquiresIssuingToken).as("acquisitions that issued the token").hasValue(2);
    }

    @Test
    void aMethodSeenReadingItsTokenHasItIssuedWithTheAcquisitionFromTheNextCallOn() {
        long first = ledger.undeclared(id);
        assertThat(backend.issuances).as("the first call: its token asked for when read").hasValue(1);
        assertThat(backend.acquiresIssuingToken).hasValue(0);

        long second = ledger.undeclared(id);
        long third = ledger.undeclared(id);
        assertThat(backend.issuances).as("issuances after two more calls").hasValue(1);
        assertThat(backend.acquiresIssuingToken).as("acquisitions that issued the token").hasValue(2);
        assertThat(List.of(first, second, third)).as("tokens in turn").isSorted().doesNotHaveDuplicates();
    }

    @Test
    void aMethodThatNeverReadsItsTokenTakesTheKeyWithoutOne() {
        assertThat(ledger.neverReads(id)).isTrue();
        assertThat(ledger.neverReads(id)).isTrue();
        assertThat(backend.acquires).hasValue(2);
        assertThat(backend.acquiresIssuingToken).as("acquisitions that issued a token nobody reads").hasValue(0);
        assertThat(backend.issuances).hasValue(0);
    }

    /** A call queued behind another of the same key gets the key by a hand-off, which issues its token in the same call. */
    @Test
    void aCallHandedTheKeyByTheCallBeforeItGetsItsTokenFromTheHandOff() throws Exception {
        section.leave = new CountDownLatch(1);
        CompletableFuture<Long> holding = CompletableFuture.supplyAsync(() -> call(ledger, id));
        assertThat(section.inside.await(10, TimeUnit.SECONDS)).as("the first call holds the key").isTrue();
        CompletableFuture<Long> queued = new CompletableFuture<>();
        Thread next = new Thread(() -> queued.complete(call(ledger, id)), "next-call");
        next.setDaemon(true);
        next.start();
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(10);
        while (!waitsForTheTurn(next)) {
            assertThat(System.nanoTime()).as("the next call queued for the key").isLessThan(deadline);
            Thread.sleep(5);
        }
        section.leave.countDown();
        long first = holding.get(10, TimeUnit.SECONDS);
        long second = queued.get(10, TimeUnit.SECONDS);
        assertThat(second).as("the token of the call the key passed to").isGreaterThan(first);
        assertThat(backend.handOffs).as("the key passed on by a hand-off").hasValue(1);
        assertThat(backend.handOffsIssuingToken).as("hand-offs that issued the next holder's token").hasValue(1);
        assertThat(backend.issuances).as("store calls issuing a token of their own").hasValue(0);
    }

    private static long call(Ledger ledger, String id) {
        try {
            return ledger.declared(id);
        } catch (InterruptedException e) {
            throw new IllegalStateException(e);
        }
    }

    private static boolean waitsForTheTurn(Thread thread) {
        for (StackTraceElement frame : thread.getStackTrace()) {
            if (frame.getClassName().equals("dev.dlock.core.LocalTurn") && frame.getMethodName().equals("enter")) {
                return thread.getState() == Thread.State.WAITING || thread.getState() == Thread.State.TIMED_WAITING;
            }
        }
        return false;
    }
}
