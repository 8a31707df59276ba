package dev.dlock.boottests.memcached;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.stereotype.Service;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A small Spring Boot 3.5 application that refreshes reports under a lock, the kind of work the memcached store
 * is for: running a refresh twice costs only time. In a package of its own, so that its scan finds no other
 * test's configuration.
 */
@SpringBootApplication
public class ReportApplication {

    /** Counts the threads inside the locked section. */
    @Bean
    OverlapDetector refreshOverlaps() {
        return new OverlapDetector();
    }

    /** Refreshes under the lock {@code report:<id>}. */
    @Service
    public static class Reports {

        private final OverlapDetector overlaps;

        Reports(OverlapDetector overlaps) {
            this.overlaps = overlaps;
        }

        /** One refresh: a read-modify-write that loses updates unless the lock excludes the others. */
        @DistributedLock(name = "report", key = "#id")
        public void refresh(String id) {
            overlaps.enter();
            try {
                overlaps.incrementUnsafely();
            } finally {
                overlaps.exit();
            }
        }

        /** Holds {@code report:<id>} until {@code release} opens, after opening {@code entered}. */
        @DistributedLock(name = "report", key = "#id")
        public void holdUntil(String id, CountDownLatch entered, CountDownLatch release) throws InterruptedException {
            entered.countDown();
            if (!release.await(30, TimeUnit.SECONDS)) {
                throw new IllegalStateException("the test never released " + id);
            }
        }
    }
}
