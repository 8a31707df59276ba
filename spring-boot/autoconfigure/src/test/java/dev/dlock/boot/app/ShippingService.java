package dev.dlock.boot.app;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.aspect.LockContext;
import org.springframework.stereotype.Service;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Locked methods for the end-to-end test. */
@Service
public class ShippingService {

    /** Ships an order under the lock {@code orders:<id>}, failing at once when it is taken. */
    @DistributedLock(name = "orders", key = "#orderId", waitTime = "0")
    public long ship(String orderId) {
        return LockContext.current().fencingToken();
    }

    /** Holds the lock {@code orders:<id>} until {@code release} opens, after opening {@code entered}. */
    @DistributedLock(name = "orders", key = "#orderId")
    public void holdUntil(String orderId, CountDownLatch entered, CountDownLatch release) throws InterruptedException {
        entered.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never released " + orderId);
        }
    }
}
