package dev.dlock.bench;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A child JVM on this JVM's classpath, driven by lines: the child prints a line when it reaches a
 * step, the parent answers with a line when the child may go on. The child's stderr goes to a log file.
 */
final class ChildJvm implements AutoCloseable {

    private final Process process;
    private final BufferedReader fromChild;
    private final PrintStream toChild;
    private final Path log;

    private ChildJvm(Process process, Path log) {
        this.process = process;
        this.log = log;
        this.fromChild = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8));
        this.toChild = new PrintStream(process.getOutputStream(), true, StandardCharsets.UTF_8);
    }

    /** Starts {@code mainClass} with {@code jvmOptions} and {@code args}; the benchmark Redis is passed on. */
    static ChildJvm start(Class<?> mainClass, List<String> jvmOptions, List<String> args, Path log) throws IOException {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        command.add("-D" + BenchRedis.PROPERTY + "=" + System.getProperty(BenchRedis.PROPERTY));
        command.add("-Djava.awt.headless=true");
        command.add("-Dorg.slf4j.simpleLogger.defaultLogLevel=warn");
        command.add("-cp");
        command.add(System.getProperty("java.class.path"));
        command.add(mainClass.getName());
        command.addAll(args);
        Process process = new ProcessBuilder(command).redirectError(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        return new ChildJvm(process, log);
    }

    /** Reads lines from the child until one starts with {@code prefix}, and returns it. */
    String awaitLine(String prefix) throws IOException {
        String line;
        while ((line = fromChild.readLine()) != null) {
            if (line.startsWith(prefix)) {
                return line;
            }
        }
        throw new IOException("child " + process.pid() + " ended before printing '" + prefix + "'; see " + log);
    }

    /** Sends one line to the child. */
    void send(String line) {
        toChild.println(line);
    }

    /** Waits for the child to exit and fails unless it exited with 0. */
    void awaitSuccess(long timeoutSeconds) throws InterruptedException {
        if (!process.waitFor(timeoutSeconds, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new IllegalStateException("child " + process.pid() + " did not finish in " + timeoutSeconds + " s; see " + log);
        }
        if (process.exitValue() != 0) {
            throw new IllegalStateException("child " + process.pid() + " exited with " + process.exitValue() + "; see " + log);
        }
    }

    /** Kills the child if it still runs. */
    @Override
    public void close() {
        if (process.isAlive()) {
            process.destroyForcibly();
        }
    }

    /** The child's end of the protocol: its standard output, which the parent reads line by line. */
    private static final PrintStream TO_PARENT =
            new PrintStream(new FileOutputStream(FileDescriptor.out), true, StandardCharsets.UTF_8);

    /** In a child: sends a step line to the parent (a protocol line, not a log line; logs go through SLF4J). */
    static void tellParent(String line) {
        TO_PARENT.println(line);
    }

    /** In a child: blocks until the parent sends a line starting with {@code prefix}. */
    static void awaitParent(BufferedReader stdin, String prefix) throws IOException {
        String line;
        while ((line = stdin.readLine()) != null) {
            if (line.startsWith(prefix)) {
                return;
            }
        }
        throw new IOException("parent closed stdin before sending '" + prefix + "'");
    }
}
