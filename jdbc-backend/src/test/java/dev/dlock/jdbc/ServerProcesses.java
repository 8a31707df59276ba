package dev.dlock.jdbc;

import dev.dlock.testkit.LoopbackPorts;
import dev.dlock.testkit.Signals;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.nio.file.attribute.UserPrincipal;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/** What the database harnesses share: free ports, temp directories, running commands, the user to run as. */
final class ServerProcesses {

    private ServerProcesses() {
    }

    /** A loopback port nobody listens on now (never 5432 or 3306: those are the machine's own servers). */
    static int freePort() {
        return LoopbackPorts.free(5432, 3306);
    }

    /** True when this JVM runs as root, where database servers refuse to start unless run as another user. */
    static boolean runningAsRoot() {
        return "root".equals(System.getProperty("user.name"));
    }

    /** A fresh directory every user can enter (servers run as another user when we are root). */
    static Path tempDirectory(String prefix) {
        try {
            Path directory = Files.createTempDirectory(prefix);
            Files.setPosixFilePermissions(directory, PosixFilePermissions.fromString("rwxr-xr-x"));
            return directory;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create a temp directory", e);
        }
    }

    /** Gives {@code path} to {@code user}. */
    static void chown(Path path, String user) {
        try {
            UserPrincipal owner = path.getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName(user);
            Files.setOwner(path, owner);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot give " + path + " to " + user, e);
        }
    }

    /** Runs {@code command} to its end within {@code timeoutSeconds}; fails with its output unless it exits 0. */
    static String run(List<String> command, Path log, long timeoutSeconds) {
        try {
            Process process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
            if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IllegalStateException("timed out after " + timeoutSeconds + " s: " + command);
            }
            if (process.exitValue() != 0) {
                throw new IllegalStateException("exit " + process.exitValue() + ": " + command + "\n" + Files.readString(log));
            }
            return Files.readString(log);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + command, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted running " + command, e);
        }
    }

    /** {@code command}, run as {@code user} through runuser when this JVM is root. */
    static List<String> asUser(String user, List<String> command) {
        if (!runningAsRoot()) {
            return command;
        }
        List<String> wrapped = new ArrayList<>(List.of("runuser", "-u", user, "--"));
        wrapped.addAll(command);
        return wrapped;
    }

    /** Sends {@code signal} ({@code STOP}, {@code CONT}, …) to process {@code pid}; fails unless kill exits 0. */
    static void signal(String signal, long pid) {
        Signals.send(pid, signal);
    }

    static void deleteRecursively(Path directory) {
        if (directory == null || !Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            // Best effort: a leftover temp directory is harmless.
        }
    }
}
