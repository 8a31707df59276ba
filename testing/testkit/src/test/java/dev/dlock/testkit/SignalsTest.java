package dev.dlock.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** Stopping and resuming real processes, as the fault tests do to a store's server and its workers. */
class SignalsTest {

    @Test
    void stoppingAChildThatExitedWhileItsParentWasStoppedReturnsAtOnce() throws Exception {
        // The shell starts a child that exits after a moment; stopped, the shell cannot reap it, so it stays a zombie
        // (as a PostgreSQL worker that ends while its postmaster is stopped), which no signal stops.
        Process parent = new ProcessBuilder("sh", "-c", "sleep 0.3 & echo $!; wait").start();
        try {
            long child;
            try (BufferedReader out = new BufferedReader(new InputStreamReader(parent.getInputStream(), StandardCharsets.UTF_8))) {
                child = Long.parseLong(out.readLine().strip());
                Signals.send(parent.pid(), "STOP");
                awaitZombie(child);
                long start = System.nanoTime();
                Signals.send(child, "STOP");
                assertThat(System.nanoTime() - start).as("stopping a zombie returns without waiting out the timeout")
                        .isLessThan(TimeUnit.SECONDS.toNanos(5));
                Signals.send(parent.pid(), "CONT");
            }
            assertThat(parent.waitFor(30, TimeUnit.SECONDS)).as("the shell ends once it runs again").isTrue();
        } finally {
            parent.destroyForcibly();
        }
    }

    private static void awaitZombie(long pid) throws Exception {
        Path stat = Path.of("/proc", Long.toString(pid), "stat");
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        while (Signals.state(stat) != 'Z') {
            assertThat(System.nanoTime()).as("process %d became a zombie within 30 s", pid).isLessThan(deadline);
            Thread.sleep(20);
        }
    }
}
