package dev.dlock.core;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Every event of one acquisition and of its hold carries one {@link AcquisitionContext} of its own, whichever thread
 * reports it: what a listener that pairs a start with its end (a span) relies on.
 */
class AcquisitionContextTest extends EngineTestSupport {

    private record Event(String what, AcquisitionContext acquisition, Thread thread) {
    }

    /** Records each acquisition event with its context and the thread that reported it. */
    private static final class Recorder implements LockListener {
        final List<Event> events = new CopyOnWriteArrayList<>();

        @Override
        public void onAcquireAttempt(AcquisitionContext acquisition) {
            events.add(new Event("attempt", acquisition, Thread.currentThread()));
        }

        @Override
        public void onAcquired(AcquisitionContext acquisition, long fencingToken, Duration waited) {
            events.add(new Event("acquired", acquisition, Thread.currentThread()));
        }

        @Override
        public void onAcquireFailed(AcquisitionContext acquisition, AcquireFailure failure, Duration waited, Throwable error) {
            events.add(new Event("failed", acquisition, Thread.currentThread()));
        }

        @Override
        public void onLeaseLost(AcquisitionContext acquisition, String reason) {
            events.add(new Event("lost", acquisition, Thread.currentThread()));
        }

        @Override
        public void onReleased(AcquisitionContext acquisition, Duration held) {
            events.add(new Event("released", acquisition, Thread.currentThread()));
        }

        List<String> whats() {
            return events.stream().map(Event::what).toList();
        }
    }

    private final Recorder recorder = new Recorder();

    @Test
    void anAsynchronousAcquisitionStartsOnTheCallersThreadAndEndsOnADlockThreadWithOneContext() throws Exception {
        LockManager locks = manager(store, b -> b.listener(recorder));
        Thread caller = Thread.currentThread();

        LockHandle handle = locks.acquireAsync(LockRequest.builder(key).name("report").kind(LockKind.WRITE).build())
                .get(10, TimeUnit.SECONDS);
        handle.close();

        assertThat(recorder.whats()).containsExactly("attempt", "acquired", "released");
        AcquisitionContext acquisition = recorder.events.get(0).acquisition();
        assertThat(recorder.events).allSatisfy(event -> assertThat(event.acquisition()).isSameAs(acquisition));
        assertThat(acquisition.lockName()).isEqualTo("report");
        assertThat(acquisition.key()).isEqualTo(key);
        assertThat(acquisition.kind()).isEqualTo(LockKind.WRITE);
        assertThat(recorder.events.get(0).thread()).as("the attempt is reported on the caller's thread").isSameAs(caller);
        assertThat(recorder.events.get(1).thread()).as("the acquisition ends on a dlock thread").isNotSameAs(caller);
    }

    @Test
    void twoReadersOfOneKeyAreTwoAcquisitionsEachReleasedWithItsOwnContext() throws Exception {
        LockManager locks = manager(store, b -> b.listener(recorder));
        LockRequest read = LockRequest.builder(key).kind(LockKind.READ).build();
        LockHandle first = locks.acquire(read);
        // Another thread: the same thread would re-enter the first reader's lease, which is no acquisition.
        LockHandle second = CompletableFuture.supplyAsync(() -> locks.acquire(read)).get(10, TimeUnit.SECONDS);

        first.close();
        second.close();

        assertThat(recorder.whats()).containsExactly("attempt", "acquired", "attempt", "acquired", "released", "released");
        AcquisitionContext firstReader = recorder.events.get(0).acquisition();
        AcquisitionContext secondReader = recorder.events.get(2).acquisition();
        assertThat(firstReader).isNotSameAs(secondReader);
        assertThat(recorder.events.get(1).acquisition()).isSameAs(firstReader);
        assertThat(recorder.events.get(3).acquisition()).isSameAs(secondReader);
        assertThat(recorder.events.get(4).acquisition()).as("the first release is the first reader's").isSameAs(firstReader);
        assertThat(recorder.events.get(5).acquisition()).isSameAs(secondReader);
    }

    @Test
    void aLossFoundAtTheReleaseIsReportedBeforeTheReleaseWithTheSameContext() {
        LockManager locks = manager(store, b -> b.listener(recorder));
        LockManager operator = manager();
        // A fixed lease has no renewals: its holder learns of the forced release only when it releases.
        LockHandle handle = locks.acquire(LockRequest.builder(key).leaseTime(Duration.ofSeconds(30)).build());
        operator.admin().forceRelease(key);

        assertThatThrownBy(handle::close).isInstanceOf(LockLostException.class);

        assertThat(recorder.whats()).containsExactly("attempt", "acquired", "lost", "released");
        assertThat(recorder.events).extracting(Event::acquisition).containsOnly(recorder.events.get(0).acquisition());
    }

    @Test
    void aListenerOfLockNamesAndKeysStillHearsEveryEvent() {
        List<String> heard = new CopyOnWriteArrayList<>();
        LockManager locks = manager(store, b -> b.listener(new LockListener() {
            @Override
            public void onAcquireAttempt(String lockName, String k) {
                heard.add("attempt " + lockName);
            }

            @Override
            public void onAcquired(String lockName, String k, long fencingToken, Duration waited) {
                heard.add("acquired " + lockName);
            }

            @Override
            public void onReleased(String lockName, String k, Duration held) {
                heard.add("released " + lockName);
            }
        }));

        locks.acquire(LockRequest.builder(key).name("report").build()).close();

        assertThat(heard).containsExactly("attempt report", "acquired report", "released report");
    }

    @Test
    void attachmentsAreKeptPerSlot() {
        AcquisitionContext acquisition = new AcquisitionContext("report", key, LockKind.EXCLUSIVE);
        Object mine = new Object();
        Object theirs = new Object();
        acquisition.put(mine, "span");
        acquisition.put(theirs, 42);

        assertThat(acquisition.get(mine, String.class)).isEqualTo("span");
        assertThat(acquisition.get(theirs, Integer.class)).isEqualTo(42);
        acquisition.put(mine, null);
        assertThat(acquisition.get(mine, String.class)).isNull();
        assertThat(acquisition.get(theirs, Integer.class)).isEqualTo(42);
    }
}
