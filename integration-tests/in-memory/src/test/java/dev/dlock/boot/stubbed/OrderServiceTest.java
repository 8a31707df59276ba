package dev.dlock.boot.stubbed;

import dev.dlock.testkit.Concurrently;
import dev.dlock.testkit.OverlapDetector;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Primary;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** docs/testing.md's example, word for word (TestingDocsTest compares them). */
// docs/testing.md: begin
@SpringBootTest(properties = "dlock.store=in-memory")
class OrderServiceTest {

    /** The detector is a bean, and the stub that replaces the real Shipping enters it. */
    @TestConfiguration
    static class Stubs {

        @Bean
        OverlapDetector overlaps() {
            return new OverlapDetector();
        }

        @Bean
        @Primary
        Shipping stubShipping(OverlapDetector overlaps) {
            return orderId -> {
                overlaps.enter();
                try {
                    overlaps.incrementUnsafely();
                } finally {
                    overlaps.exit();
                }
            };
        }
    }

    @Autowired
    OrderService orders;

    @Autowired
    OverlapDetector overlaps;

    @BeforeEach
    void freshCounts() {
        overlaps.reset();   // Spring caches the context, and the detector with it, across tests
    }

    @Test
    void callersOfOneOrderNeverOverlap() throws Exception {
        Concurrently.run(4, 10, Duration.ofSeconds(60), () -> orders.ship("42"));
        assertThat(overlaps.overlaps()).isZero();
        assertThat(overlaps.counter()).isEqualTo(40);
    }

    @Test
    void callersOfAnotherOrderNeverOverlapEither() throws Exception {
        Concurrently.run(4, 10, Duration.ofSeconds(60), () -> orders.ship("43"));
        assertThat(overlaps.overlaps()).isZero();
        assertThat(overlaps.counter()).isEqualTo(40);
    }
}
// docs/testing.md: end
