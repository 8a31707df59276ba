package dev.dlock.dashboard;

import org.springframework.stereotype.Component;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** What the quick start's locked method calls: returns at once, or holds the lock until the test lets it go. */
@Component
public class Shipping {

    volatile CountDownLatch entered = new CountDownLatch(0);
    volatile CountDownLatch release = new CountDownLatch(0);

    /** Sends one order. */
    public void send(String orderId) {
        entered.countDown();
        try {
            if (!release.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never let order " + orderId + " go");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while sending " + orderId, e);
        }
    }
}
