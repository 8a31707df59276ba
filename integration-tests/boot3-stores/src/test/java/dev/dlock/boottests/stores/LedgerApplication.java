package dev.dlock.boottests.stores;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.stereotype.Service;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/** A small Spring Boot 3.5 application with one locked service; the store is chosen by the test's properties. */
@SpringBootApplication
public class LedgerApplication {

    /** Counts the threads inside the locked section. */
    @Bean
    OverlapDetector ledgerOverlaps() {
        return new OverlapDetector();
    }

    /** Postings under the lock {@code ledger:<account>}. */
    @Service
    public static class Ledger {

        private final OverlapDetector overlaps;

        Ledger(OverlapDetector overlaps) {
            this.overlaps = overlaps;
        }

        /** One posting: a read-modify-write that loses updates unless the lock excludes the others. */
        @DistributedLock(name = "ledger", key = "#account")
        public void post(String account) {
            overlaps.enter();
            try {
                overlaps.incrementUnsafely();
            } finally {
                overlaps.exit();
            }
        }

        /** Holds {@code ledger:<account>} until {@code release} opens, after opening {@code entered}. */
        @DistributedLock(name = "ledger", key = "#account")
        public void holdUntil(String account, CountDownLatch entered, CountDownLatch release) throws InterruptedException {
            entered.countDown();
            if (!release.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released " + account);
            }
        }
    }
}
