package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.core.LockManager;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;
import reactor.core.publisher.Mono;

import java.time.Duration;
import java.util.List;
import java.util.Map;
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

    /** The fencing token as a parameter of its own, in every shape a locked method returns. */
    public interface Posting {
        /** The token given to a method whose interface declares the parameter. */
        long post(String id, @FencingToken long token);
    }

    /** Locked methods that take their token as a {@code @FencingToken} parameter. */
    public static class TokenLedger implements Posting {
        @DistributedLock(key = "#id")
        public long[] plain(String id, @FencingToken long token) {
            return new long[] {token, LockContext.current().fencingToken()};
        }

        @DistributedLock(key = "#id")
        public Long boxed(@FencingToken Long token, String id) {
            return token;
        }

        @DistributedLock(keys = {"#first", "#second"})
        public Map<String, Long> severalKeys(String first, String second, @FencingToken Map<String, Long> tokens) {
            assertThat(tokens).isEqualTo(LockContext.current().fencingTokens());
            return tokens;
        }

        @DistributedLock(key = "#id")
        public CompletableFuture<Long> async(String id, @FencingToken long token) {
            return CompletableFuture.supplyAsync(() -> token);
        }

        @DistributedLock(key = "#id")
        public Mono<Long> reactive(String id, @FencingToken long token) {
            return Mono.fromSupplier(() -> token);
        }

        @DistributedLock(key = "#id", condition = "#locked")
        public long conditional(String id, boolean locked, @FencingToken long token) {
            return token;
        }

        @Override
        @DistributedLock(key = "#id")
        public long post(String id, long token) {
            return token;
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
    private TokenLedger tokens;
    private final String id = UUID.randomUUID().toString();

    @BeforeEach
    void start() {
        context = new AnnotationConfigApplicationContext();
        context.registerBean(LockManager.class, () -> LockManager.builder(backend).leaseTime(Duration.ofSeconds(3)).build());
        context.registerBean(Ledger.class, () -> new Ledger(section));
        context.registerBean(TokenLedger.class);
        context.register(Locking.class);
        context.refresh();
        ledger = context.getBean(Ledger.class);
        tokens = context.getBean(TokenLedger.class);
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

    /**
     * The method gets its hold's token in place of what the caller passed, issued by the acquisition itself; every call
     * a higher one, whatever the method returns.
     */
    @Test
    void aFencingTokenParameterGetsTheHoldsTokenIssuedWithTheAcquisition() {
        long[] first = tokens.plain(id, 0);
        assertThat(first[0]).as("the parameter's token, the caller having passed 0").isPositive().isEqualTo(first[1]);
        long boxed = tokens.boxed(-1L, id);
        long async = tokens.async(id, 0).join();
        long reactive = tokens.reactive(id, 0).block(Duration.ofSeconds(10));
        long declaredOnTheInterface = tokens.post(id, 0);
        assertThat(List.of(first[0], boxed, async, reactive, declaredOnTheInterface)).as("tokens in turn")
                .isSorted().doesNotHaveDuplicates();
        assertThat(backend.issuances).as("store calls issuing a token of their own").hasValue(0);
        assertThat(backend.acquiresIssuingToken).as("acquisitions that issued the token").hasValue(5);
    }

    @Test
    void aMethodLockingSeveralKeysGetsEveryKeysTokenByKey() {
        Map<String, Long> byKey = tokens.severalKeys(id + ":b", id + ":a", null);
        assertThat(byKey.keySet()).as("the lock manager's keys, in acquisition order").satisfiesExactly(
                key -> assertThat(key).endsWith(id + ":a"), key -> assertThat(key).endsWith(id + ":b"));
        assertThat(byKey.values()).allSatisfy(token -> assertThat(token).isPositive());
        assertThat(backend.issuances).as("store calls issuing a token of their own").hasValue(0);
    }

    /** A call that runs unlocked gets no token: what the caller passed goes through, and nothing is issued. */
    @Test
    void aCallWhoseConditionIsFalseGetsWhatTheCallerPassed() {
        assertThat(tokens.conditional(id, false, 42)).isEqualTo(42);
        assertThat(backend.acquires).hasValue(0);
        assertThat(tokens.conditional(id, true, 42)).isNotEqualTo(42).isPositive();
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
