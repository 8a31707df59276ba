package dev.dlock.boot.shutdown;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.ApplicationListener;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.ContextClosedEvent;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.concurrent.CountDownLatch;

/**
 * A web application for {@link SigtermShutdownTest}, run in a child JVM that the test ends with SIGTERM. It holds keys
 * in critical sections and reports to a status file, one line each: {@code PORT <port>} once started, {@code HELD <key>}
 * when a section took its key, {@code RELEASED <key>} when a section's own release succeeded, {@code RELEASE-FAILED <key>
 * <error>} when it failed, {@code LOST <key>: <reason>} when the engine reported a lease lost. A section "ending after
 * the signal" waits for the context's close to begin, then works a given time more.
 *
 * <p>Arguments: Boot's own ({@code --dlock.redis.url=...}, {@code --dlock.shutdown.grace-period=...}) and
 * {@code --status=<file>}, {@code --background=<key>:<ms>,...} (sections on threads of their own, each ending that many
 * ms after the close began; -1 for never).
 */
@SpringBootApplication
public class SigtermApplication {

    /** Counted down when the context starts closing (the signal arrived). */
    static final CountDownLatch CLOSING = new CountDownLatch(1);

    public static void main(String[] args) {
        ConfigurableApplicationContext context = new SpringApplication(SigtermApplication.class).run(args);
        String status = context.getEnvironment().getRequiredProperty("status");
        LockManager locks = context.getBean(LockManager.class);
        for (String section : context.getEnvironment().getProperty("background", "").split(",")) {
            if (section.isBlank()) {
                continue;
            }
            String key = section.substring(0, section.lastIndexOf(':'));
            long endsAfterMillis = Long.parseLong(section.substring(section.lastIndexOf(':') + 1));
            Thread thread = new Thread(() -> section(locks, status, key, endsAfterMillis), "section-" + key);
            thread.start();
        }
        report(status, "PORT " + context.getEnvironment().getRequiredProperty("local.server.port"));
    }

    /** Reports leases the engine found lost, with their reasons. */
    @Bean
    LockListener lossReporter(@Value("${status}") String status) {
        return new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                report(status, "LOST " + key + ": " + reason);
            }
        };
    }

    /** Marks the start of the context's close: sections ending "after the signal" count from here. */
    @Bean
    ApplicationListener<ContextClosedEvent> closingMarker() {
        return event -> CLOSING.countDown();
    }

    /** A critical section inside an HTTP request. */
    @RestController
    static class Sections {

        private final LockManager locks;
        private final String status;

        Sections(LockManager locks, @Value("${status}") String status) {
            this.locks = locks;
            this.status = status;
        }

        /** Holds {@code key} until {@code endsAfterMillis} after the close began; answers how its release went. */
        @GetMapping("/section")
        String section(@RequestParam String key, @RequestParam long endsAfterMillis) {
            return SigtermApplication.section(locks, status, key, endsAfterMillis);
        }
    }

    /** Runs one critical section on {@code key}; answers how its own release went (also reported). */
    static String section(LockManager locks, String status, String key, long endsAfterMillis) {
        LockHandle handle;
        try {
            handle = locks.acquire(key, Duration.ofSeconds(30));
        } catch (RuntimeException e) {
            report(status, "ACQUIRE-FAILED " + key + " " + e);
            return "acquire failed";
        }
        String outcome;
        try {
            report(status, "HELD " + key);
            CLOSING.await();
            if (endsAfterMillis < 0) {
                new CountDownLatch(1).await();
            }
            // The section's own work, going on after the signal.
            Thread.sleep(endsAfterMillis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            try {
                handle.close();
                outcome = "RELEASED " + key;
            } catch (RuntimeException e) {
                outcome = "RELEASE-FAILED " + key + " " + e;
            }
            report(status, outcome);
        }
        return outcome;
    }

    /** Appends one line to the status file. */
    static synchronized void report(String statusFile, String line) {
        try {
            Files.writeString(Path.of(statusFile), line.replace('\n', ' ') + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        } catch (Exception e) {
            // nothing to tell it with: the test's wait runs out and shows the child's output
        }
    }
}
