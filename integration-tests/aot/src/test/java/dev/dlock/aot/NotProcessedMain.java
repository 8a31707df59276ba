package dev.dlock.aot;

import org.springframework.boot.SpringApplication;

/**
 * Starts the same application from a main class {@code process-aot} never saw: in AOT mode Boot looks for this class's
 * generated initializer, finds none, and refuses to start — so a start that works used the generated one.
 */
public final class NotProcessedMain {

    private NotProcessedMain() {
    }

    /** Starts {@link AotApplication}'s sources from here. */
    public static void main(String[] args) {
        SpringApplication.run(AotApplication.class, args);
    }
}
