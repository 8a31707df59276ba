package dev.dlock.boottests;

import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;

/** A small web application with one locked service, the same source on the Spring Boot 3.5 and 4.1 lines. */
@SpringBootApplication
public class StockApplication {

    /** Counts the threads inside the locked section. */
    @Bean
    OverlapDetector stockOverlaps() {
        return new OverlapDetector();
    }
}
