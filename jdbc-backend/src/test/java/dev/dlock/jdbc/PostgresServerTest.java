package dev.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/** The test PostgreSQL server never outlives its test, also when a failed test left it stopped. */
class PostgresServerTest {

    @Test
    void closingAServerLeftStoppedEndsEveryProcessOfIt() throws InterruptedException {
        PostgresServer server = PostgresServer.start();
        List<ProcessHandle> processes = new ArrayList<>();
        ProcessHandle.of(server.postmasterPid()).ifPresent(postmaster -> {
            processes.add(postmaster);
            postmaster.descendants().forEach(processes::add);
        });
        try {
            server.signalAll("STOP");
            server.close();
            // The postmaster is gone when close() returns; a child it no longer waits for may take a moment to be reaped.
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (processes.stream().anyMatch(ProcessHandle::isAlive) && System.nanoTime() < deadline) {
                Thread.sleep(20);
            }
            assertThat(processes.stream().filter(ProcessHandle::isAlive).map(p -> p.pid() + " " + p.info().commandLine().orElse("?")).toList())
                    .as("processes of the closed server still alive 30 s after close()").isEmpty();
        } finally {
            // Never leave a stopped server to the next test, whatever the assertion said.
            processes.forEach(ProcessHandle::destroyForcibly);
        }
    }
}
