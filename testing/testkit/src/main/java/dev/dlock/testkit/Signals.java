package dev.dlock.testkit;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * Sends a signal to a server process the test started, and for SIGSTOP and SIGCONT waits until it took effect: {@code kill}
 * returns once the signal is queued, while the server's threads stop (or run again) a moment later, and a request sent
 * in between would still be answered by a "stopped" server.
 */
public final class Signals {

    private static final long TIMEOUT_NANOS = TimeUnit.SECONDS.toNanos(10);

    private Signals() {
    }

    /** Sends {@code signal} (a name such as {@code STOP}, {@code CONT}, {@code KILL}) to {@code pid}; see the class comment. */
    public static void send(long pid, String signal) {
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                kill.destroyForcibly();
                throw new IllegalStateException("kill -" + signal + " " + pid + " failed: "
                        + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run kill -" + signal + " " + pid, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted sending SIG" + signal + " to " + pid, e);
        }
        if (signal.equals("STOP") || signal.equals("CONT")) {
            awaitStopped(pid, signal.equals("STOP"));
        }
    }

    /** Waits until every thread of {@code pid} is stopped, or none is; returns at once when /proc cannot tell. */
    private static void awaitStopped(long pid, boolean stopped) {
        Path tasks = Path.of("/proc", Long.toString(pid), "task");
        long deadline = System.nanoTime() + TIMEOUT_NANOS;
        while (Files.isDirectory(tasks)) {
            Boolean all = allStopped(tasks, stopped);
            if (all == null || all) {
                return;
            }
            if (System.nanoTime() - deadline > 0) {
                throw new IllegalStateException("process " + pid + " did not " + (stopped ? "stop" : "run again")
                        + " within 10 s of its signal; its threads' states: " + states(tasks));
            }
            Thread.onSpinWait();
        }
    }

    /**
     * Whether every thread is stopped ({@code stopped}) or every one runs; null when the threads cannot be read. A thread
     * that has exited counts as either: a child that exits while its stopped parent cannot reap it stays a zombie,
     * which no signal changes (a PostgreSQL worker ending as its postmaster is stopped).
     */
    private static Boolean allStopped(Path tasks, boolean stopped) {
        try (Stream<Path> threads = Files.list(tasks)) {
            return threads.allMatch(thread -> {
                char state = state(thread.resolve("stat"));
                return state == 'Z' || state == 'X' || (state == 'T' || state == 't') == stopped;
            });
        } catch (IOException | UncheckedIOException e) {
            return null;
        }
    }

    /** The state letter of a process or thread, from {@code /proc/<pid>/stat} ({@code R}, {@code S}, {@code T}, {@code Z} ...). */
    static char state(Path stat) {
        try {
            String line = Files.readString(stat);
            // The state follows the command name, which is in parentheses and may itself hold spaces or ')'.
            return line.charAt(line.lastIndexOf(')') + 2);
        } catch (IOException e) {
            // A thread that ended meanwhile is neither.
            throw new UncheckedIOException(e);
        }
    }

    private static String states(Path tasks) {
        try (Stream<Path> threads = Files.list(tasks)) {
            return threads.map(thread -> thread.getFileName() + "=" + state(thread.resolve("stat"))).toList().toString();
        } catch (IOException | UncheckedIOException e) {
            return "(unreadable: " + e.getMessage() + ")";
        }
    }
}
