package dev.dlock.core.spi;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class KeyListenersTest {

    @Test
    void aListenerArrivingWhileTheLastOneLeavesFindsItsKeySubscribed() throws Exception {
        AtomicBoolean subscribed = new AtomicBoolean();
        AtomicReference<Thread> newcomer = new AtomicReference<>();
        AtomicBoolean newcomerAdded = new AtomicBoolean();
        CountDownLatch unsubscribing = new CountDownLatch(1);
        KeyListeners<Plain> listeners = new KeyListeners<>(new Object(), key -> subscribed.set(true), key -> {
            unsubscribing.countDown();
            // The store's unsubscribe is under way: the newcomer either waits for it to end or (a naive registry)
            // subscribes meanwhile, and this unsubscribe then lands after its subscribe.
            awaitWaitingOrDone(newcomer, newcomerAdded);
            subscribed.set(false);
        });
        Plain last = listeners.add(new Plain("k", () -> { }));
        Thread leaving = new Thread(last::close);
        leaving.start();
        unsubscribing.await();
        Thread arriving = new Thread(() -> {
            listeners.add(new Plain("k", () -> { }));
            newcomerAdded.set(true);
        });
        newcomer.set(arriving);
        arriving.start();
        leaving.join();
        arriving.join();

        assertThat(listeners.contains("k")).isTrue();
        assertThat(subscribed).as("the store is subscribed to the key while the newcomer listens").isTrue();
    }

    @Test
    void theStoreIsSubscribedExactlyToTheKeysThatHaveListenersUnderConcurrentComings() throws Exception {
        Map<String, Boolean> subscribed = new ConcurrentHashMap<>();
        List<String> violations = new CopyOnWriteArrayList<>();
        KeyListeners<Plain> listeners = new KeyListeners<>(new Object(), key -> {
            if (subscribed.put(key, true) != null) {
                violations.add("subscribed twice: " + key);
            }
        }, key -> {
            if (subscribed.remove(key) == null) {
                violations.add("unsubscribed while not subscribed: " + key);
            }
        });
        int threads = 8;
        CountDownLatch start = new CountDownLatch(1);
        List<Thread> workers = new ArrayList<>();
        List<List<Plain>> kept = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            List<Plain> mine = new ArrayList<>();
            kept.add(mine);
            Thread worker = new Thread(() -> {
                await(start);
                ThreadLocalRandom random = ThreadLocalRandom.current();
                for (int i = 0; i < 20_000; i++) {
                    if (mine.isEmpty() || random.nextBoolean()) {
                        mine.add(listeners.add(new Plain("k" + random.nextInt(3), () -> { })));
                    } else {
                        mine.remove(random.nextInt(mine.size())).close();
                    }
                }
            });
            workers.add(worker);
            worker.start();
        }
        start.countDown();
        for (Thread worker : workers) {
            worker.join();
        }

        assertThat(violations).isEmpty();
        assertThat(subscribed.keySet()).isEqualTo(listeners.keys());
        kept.forEach(mine -> mine.forEach(Plain::close));
        assertThat(subscribed).isEmpty();
        assertThat(listeners.keys()).isEmpty();
    }

    @Test
    void aNoticeCallsEveryOpenListenerOfItsKeyOnceEvenWhenOneThrows() {
        KeyListeners<Plain> listeners = new KeyListeners<>();
        List<String> calls = new CopyOnWriteArrayList<>();
        listeners.add(new Plain("k", () -> calls.add("first")));
        listeners.add(new Plain("k", () -> {
            throw new IllegalStateException("a broken listener");
        }));
        listeners.add(new Plain("k", () -> calls.add("third")));
        listeners.add(new Plain("k", () -> calls.add("closed"))).close();
        listeners.add(new Plain("other", () -> calls.add("other")));

        listeners.wake("k", "release");
        assertThat(calls).containsExactly("first", "third");

        calls.clear();
        listeners.wakeAll("reconnect");
        assertThat(calls).containsExactlyInAnyOrder("first", "third", "other");
    }

    @Test
    void closingTwiceLeavesOnceAndAListenerIsAddedOnlyOnce() {
        AtomicInteger unsubscribes = new AtomicInteger();
        KeyListeners<Plain> listeners = new KeyListeners<>(new Object(), key -> { }, key -> unsubscribes.incrementAndGet());
        Plain listener = listeners.add(new Plain("k", () -> { }));

        assertThatThrownBy(() -> listeners.add(listener)).isInstanceOf(IllegalStateException.class).hasMessageContaining("'k'");
        listener.close();
        listener.close();

        assertThat(unsubscribes).hasValue(1);
        assertThat(listener.closedCalls).hasValue(1);
        assertThatThrownBy(() -> listeners.add(listener)).isInstanceOf(IllegalStateException.class);
    }

    @Test
    void aFailedSubscribeLeavesNothingRegistered() {
        AtomicBoolean fail = new AtomicBoolean(true);
        KeyListeners<Plain> listeners = new KeyListeners<>(new Object(), key -> {
            if (fail.get()) {
                throw new IllegalStateException("store down");
            }
        }, key -> { });

        assertThatThrownBy(() -> listeners.add(new Plain("k", () -> { }))).hasMessage("store down");
        assertThat(listeners.contains("k")).isFalse();
        fail.set(false);
        listeners.add(new Plain("k", () -> { }));
        assertThat(listeners.keys()).containsExactly("k");
    }

    /** Returns once the newcomer waits (on the registry's lock) or has finished adding. */
    private static void awaitWaitingOrDone(AtomicReference<Thread> newcomer, AtomicBoolean added) {
        while (true) {
            Thread thread = newcomer.get();
            if (added.get()) {
                return;
            }
            if (thread != null) {
                Thread.State state = thread.getState();
                if (state == Thread.State.BLOCKED || state == Thread.State.WAITING || state == Thread.State.TIMED_WAITING) {
                    return;
                }
            }
            Thread.onSpinWait();
        }
    }

    private static void await(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static final class Plain extends KeyListeners.Listener {
        final AtomicInteger closedCalls = new AtomicInteger();

        Plain(String key, Runnable onRelease) {
            super(key, onRelease);
        }

        @Override
        protected void closed() {
            closedCalls.incrementAndGet();
        }
    }
}
