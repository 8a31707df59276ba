package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;

import org.junit.jupiter.api.Test;

import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedClass;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordingFile;

/**
 * An uncontended hold inflates no monitor. With the JVM's stack locking (JDK 17's default), an identity hash taken of
 * an object whose monitor the thread holds turns that monitor into a heavyweight one: the watchdog's slot hashes the
 * lease while the acquisition holds the lease's monitor, so every watchdog-managed hold once paid a monitor's
 * inflation (and its later deflation), a quarter of the engine's CPU per hold at 8 threads. The JVM reports each
 * inflation as a JFR event naming the monitor's class.
 */
class HoldMonitorInflationTest extends EngineTestSupport {

    private static final int HOLDS = 200;

    @Test
    void watchdogManagedHoldsInflateNoMonitor() throws Exception {
        LockManager locks = manager();
        for (int i = 0; i < 20; i++) {
            // Loads and links what a hold touches, so that only the holds below are recorded.
            locks.acquire(key + ":warm", Duration.ZERO).close();
        }
        Path file = Files.createTempFile("dlock-inflation", ".jfr");
        try (Recording recording = new Recording()) {
            recording.enable("jdk.JavaMonitorInflate").withoutThreshold().withStackTrace();
            recording.start();
            for (int i = 0; i < HOLDS; i++) {
                try (LockHandle lock = locks.acquire(key + ":" + i, Duration.ZERO)) {
                    assertThat(leaseOf(lock).watched).as("a watchdog-managed lease").isTrue();
                }
            }
            recording.stop();
            recording.dump(file);
            List<String> inflated = RecordingFile.readAllEvents(file).stream()
                    .filter(event -> isEngines(event.getClass("monitorClass")))
                    .map(HoldMonitorInflationTest::describe)
                    .toList();
            assertThat(inflated).as("the engine's monitors inflated during " + HOLDS + " uncontended holds, "
                    + inflated.stream().distinct().toList()).isEmpty();
        } finally {
            Files.deleteIfExists(file);
        }
    }

    private static boolean isEngines(RecordedClass monitorClass) {
        return monitorClass != null && monitorClass.getName().startsWith("dev.dlock.");
    }

    private static String describe(RecordedEvent event) {
        Object cause = event.hasField("cause") ? event.getValue("cause") : "?";
        String frames = event.getStackTrace() == null ? "" : event.getStackTrace().getFrames().stream().limit(6)
                .map(frame -> frame.getMethod().getType().getName() + "." + frame.getMethod().getName())
                .reduce((a, b) -> a + " < " + b).orElse("");
        return event.getClass("monitorClass").getName() + ", cause " + cause + ": " + frames;
    }
}
