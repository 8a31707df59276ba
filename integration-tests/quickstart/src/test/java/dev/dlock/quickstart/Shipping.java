package dev.dlock.quickstart;

import dev.dlock.testkit.OverlapDetector;
import org.springframework.stereotype.Component;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** What the quick start's locked method calls: counts callers inside at once, and can be held open by a test. */
@Component
public class Shipping {

    final OverlapDetector overlaps = new OverlapDetector();
    volatile CountDownLatch entered = new CountDownLatch(0);
    volatile CountDownLatch release = new CountDownLatch(0);

    /** Sends one order; a read-modify-write that loses updates unless the lock keeps callers apart. */
    public void send(String orderId) {
        overlaps.enter();
        try {
            overlaps.incrementUnsafely();
            entered.countDown();
            if (!release.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let order " + orderId + " go");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while sending " + orderId, e);
        } finally {
            overlaps.exit();
        }
    }
}
