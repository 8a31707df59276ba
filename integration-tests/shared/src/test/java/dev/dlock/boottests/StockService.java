package dev.dlock.boottests;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.stereotype.Service;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** Stock reservations under the lock {@code stock:<sku>}. */
@Service
public class StockService {

    private final OverlapDetector overlaps;

    StockService(OverlapDetector overlaps) {
        this.overlaps = overlaps;
    }

    /** Reserves one item: a read-modify-write that loses updates unless the lock excludes the others. */
    @DistributedLock(name = "stock", key = "#sku")
    public void reserve(String sku) {
        overlaps.enter();
        try {
            overlaps.incrementUnsafely();
        } finally {
            overlaps.exit();
        }
    }

    /** Holds {@code stock:<sku>} until {@code release} opens, after opening {@code entered}. */
    @DistributedLock(name = "stock", key = "#sku")
    public void holdUntil(String sku, CountDownLatch entered, CountDownLatch release) throws InterruptedException {
        entered.countDown();
        if (!release.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the test never released " + sku);
        }
    }
}
