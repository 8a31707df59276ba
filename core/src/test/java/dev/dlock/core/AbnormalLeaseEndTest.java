package dev.dlock.core;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A lease that ends abnormally leaves nothing behind: no key held for nobody, no waiter of this JVM asleep on a term
 * that is over, no holder told late. The paths: a hand-off whose outcome stays unknown followed by a release that
 * fails, a term shortened by an extension, a release forced by another instance, and the release of a lease already
 * known to be lost. (The manager's close is in {@link ManagerShutdownTest}, a late acquisition in
 * {@link UnknownAttemptsTest}.)
 */
class AbnormalLeaseEndTest extends EngineTestSupport {

    private final Logger engineLog = (Logger) LoggerFactory.getLogger("dev.dlock.core");
    private final ListAppender<ILoggingEvent> logged = new ListAppender<>();

    @AfterEach
    void stopCapturingLogs() {
        engineLog.detachAppender(logged);
    }

    private List<String> lostLeaseWarnings() {
        return logged.list.stream().filter(event -> event.getLevel() == Level.WARN)
                .map(ILoggingEvent::getFormattedMessage).filter(message -> message.startsWith("dlock lease lost:")).toList();
    }

    private void captureLogs() {
        logged.start();
        engineLog.addAppender(logged);
    }

    /**
     * The hand-off's reply is lost after it landed (the key is the successor's owner's in the store), and the release
     * that follows cannot reach the store either: the successor's owner is released again once the store answers, so
     * the successor (which asks the store itself) gets the key within its wait instead of after the 30 s lease.
     */
    @Test
    void aHandOffOfUnknownOutcomeFollowedByAFailingReleaseLeavesNoKeyHeldForNobody() throws Exception {
        RecordingBackend tapped = new RecordingBackend(store);
        AtomicBoolean storeDown = new AtomicBoolean(true);
        tapped.aroundHandOff(call -> {
            HandOffResult answer = call.get();
            if (storeDown.get()) {
                throw new LockBackendException("the hand-off's reply was lost (test)", null);
            }
            return answer;
        });
        tapped.aroundRelease(call -> {
            if (storeDown.get()) {
                throw new LockBackendException("the store cannot be reached (test)", null);
            }
            return call.get();
        });
        LockManager locks = manager(tapped, b -> { });
        LockHandle held = locks.acquire(key, Duration.ZERO);
        CompletableFuture<Object> successor = queuedWaiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(20)).build());

        assertThatThrownBy(held::close).as("the holder's release, whose outcome stayed unknown")
                .isInstanceOf(LockBackendException.class);
        assertThat(tapped.handOffs.get()).as("hand-offs sent").isPositive();
        storeDown.set(false);

        assertThat(successor.get(30, TimeUnit.SECONDS)).as("what the successor got, waiting up to 20 s").isEqualTo("took the key");
        assertFree(manager(), key, "nothing is left held");
    }

    /**
     * A fixed lease of 30 s shortened to 300 ms: another instance could take the key once the short term ends, and so
     * does this JVM's own thread queued for the turn, within seconds instead of sleeping on the old term (or until its
     * 25 s wait ends: it takes the key then, since the turn lapsed by then).
     */
    @Test
    void aShortenedTermWakesTheJvmsQueuedThreadAtTheNewEnd() throws Exception {
        LockManager locks = manager();
        LockHandle held = locks.acquire(LockRequest.builder(key).leaseTime(Duration.ofSeconds(30)).waitTime(Duration.ZERO).build());
        CompletableFuture<Object> waited = queuedWaiter(locks, LockRequest.builder(key).waitTime(Duration.ofSeconds(25)).build());

        held.extend(Duration.ofMillis(300));

        assertThat(waited.get(10, TimeUnit.SECONDS)).as("what the queued thread got within 10 s of the shortening")
                .isEqualTo("took the key");
        assertThatThrownBy(held::close).as("the shortened lease ran out under its holder").isInstanceOf(LockLostException.class);
    }

    @Test
    void aShortenedTermWakesTheJvmsQueuedAsynchronousAcquisitionAtTheNewEnd() throws Exception {
        LockManager locks = manager();
        // Taken on another thread: an asynchronous acquisition of the holding thread would re-enter the lease.
        LockHandle held = CompletableFuture.supplyAsync(() -> locks.acquire(LockRequest.builder(key)
                .leaseTime(Duration.ofSeconds(30)).waitTime(Duration.ZERO).build())).get(10, TimeUnit.SECONDS);
        CompletableFuture<LockHandle> waited = locks.acquireAsync(LockRequest.builder(key).waitTime(Duration.ofSeconds(25)).build());
        // Queued behind the holder, with its check scheduled for the old term's end.
        assertThat(waited).isNotDone();

        held.extend(Duration.ofMillis(300));

        try (LockHandle taken = waited.get(10, TimeUnit.SECONDS)) {
            assertThat(taken.isHeld()).as("the asynchronous acquisition took the key within 10 s of the shortening").isTrue();
        }
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);
    }

    /**
     * An operator forces the release from another instance: the stuck holder's JVM learns it from the store at once,
     * so its own thread queued for the key takes it within its 5 s wait, not after the holder's next renewal.
     */
    @Test
    void aReleaseForcedByAnotherInstanceReachesTheHoldersJvmAtOnce() throws Exception {
        LockManager stuck = manager();
        LockManager operator = manager();
        LockHandle held = stuck.acquire(key, Duration.ZERO);
        CompletableFuture<Object> waited = queuedWaiter(stuck, LockRequest.builder(key).waitTime(Duration.ofSeconds(5)).build());

        assertThat(operator.admin().forceRelease(key)).as("holders removed").hasSize(1);

        assertThat(held.state()).as("the stuck holder's lease, right after the forced release returned").isEqualTo(LockState.LOST);
        assertThat(waited.get(30, TimeUnit.SECONDS)).as("what the stuck holder's other thread got, waiting up to 5 s")
                .isEqualTo("took the key");
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class).hasMessageContaining("forced");
    }

    /**
     * The watchdog found the lease lost while the store cannot be reached: the holder's release says so at once, never
     * waiting for the store on the holder's thread (a Spring Integration leader is revoked at once), and the release
     * goes on in the background. One WARN tells of the loss.
     */
    @Test
    void releasingALeaseKnownToBeLostThrowsAtOnceAndReleasesInTheBackground() {
        captureLogs();
        RecordingBackend tapped = tapped();
        AtomicBoolean storeDown = new AtomicBoolean();
        List<Thread> releasingThreads = new CopyOnWriteArrayList<>();
        tapped.aroundRenew(call -> {
            if (storeDown.get()) {
                throw new LockBackendException("the store cannot be reached (test)", null);
            }
            return call.get();
        });
        tapped.aroundRelease(call -> {
            releasingThreads.add(Thread.currentThread());
            if (storeDown.get()) {
                throw new LockBackendException("the store cannot be reached (test)", null);
            }
            return call.get();
        });
        LockManager locks = manager(tapped, b -> b.leaseTime(Duration.ofMillis(600)));
        LockHandle held = locks.acquire(key, Duration.ZERO);
        storeDown.set(true);
        await("the watchdog to report the lease lost", Duration.ofSeconds(10), () -> held.state() == LockState.LOST
                && leaseOf(held).recordedState() == LockState.LOST);

        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class).hasMessageContaining(key);

        assertThat(releasingThreads).as("releases sent on the holder's thread").doesNotContain(Thread.currentThread());
        storeDown.set(false);
        await("the release in the background", Duration.ofSeconds(10), () -> !releasingThreads.isEmpty());
        assertThat(lostLeaseWarnings()).as("WARNs of the lost lease").singleElement().asString().contains(key);
    }

    /**
     * A fixed lease that ran out is found lost by its holder's release (as Spring Integration's leader finds it on its
     * heartbeat, before any renewal): the loss is logged at WARN once, whatever the lease-lost policy.
     */
    @Test
    void aLossFoundByTheReleaseIsLoggedAtWarnOnce() {
        captureLogs();
        LockManager locks = manager();
        LockHandle held = locks.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(200)).waitTime(Duration.ZERO).build());
        skipStoreTime(Duration.ofSeconds(1));
        await("the fixed lease to run out", Duration.ofSeconds(10), () -> held.state() == LockState.LOST);
        assertThat(manager().tryAcquire(key)).as("another instance takes the key").isPresent().get()
                .satisfies(LockHandle::close);

        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class);

        assertThat(lostLeaseWarnings()).as("WARNs of the lost lease").singleElement().asString().contains(key);
    }
}
