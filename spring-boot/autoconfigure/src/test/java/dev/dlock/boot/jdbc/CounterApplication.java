package dev.dlock.boot.jdbc;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** A tiny application whose lock store comes from the test's properties. */
@SpringBootApplication
public class CounterApplication {

    /** The service whose critical section must never run twice at once per key. */
    @Bean
    Counter counter() {
        return new Counter();
    }

    /** Counts under a lock, with an overlap detector inside the critical section. */
    public static class Counter {

        private final OverlapDetector detector = new OverlapDetector();

        /** The detector; a method, because the bean is a proxy whose own fields are empty. */
        public OverlapDetector detector() {
            return detector;
        }

        /** One unsafe increment under the lock of {@code key}. */
        @DistributedLock(name = "counter", key = "#key", waitTime = "10s")
        public void increment(String key) {
            detector.enter();
            try {
                detector.incrementUnsafely();
            } finally {
                detector.exit();
            }
        }
    }
}
