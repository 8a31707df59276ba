package dev.dlock.testkit;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockListener;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.LockBackend;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * A holder of a key in a second, real JVM, for tests of what another process can see and do in the store (who holds a
 * key, a forced release): the child connects its backend with a {@link BackendFactory}, a {@link LockManager} with the given
 * instance id, takes the key with a watchdog-managed lease on a thread of the given name, and holds it until the
 * engine reports the lease lost; it then exits with {@link #EXIT_LEASE_LOST}. The child reports to the parent through
 * a status file (it prints nothing); its output (its logs) and that file are kept for the test's messages.
 */
public final class OtherJvmHolder implements AutoCloseable {

    /** The child's exit code when its engine reported the lease lost (the renewal failed or the session said so). */
    public static final int EXIT_LEASE_LOST = 42;
    /** The child's exit code when nothing reported the lease lost within {@link #CHILD_PATIENCE}. */
    public static final int EXIT_STILL_HELD = 43;
    /** How long the child holds the key at most before giving up on being told of its loss. */
    public static final Duration CHILD_PATIENCE = Duration.ofSeconds(120);

    private static final String HELD = "HELD ";
    /** What {@link #fencingToken()} answers for a store that issues no tokens. */
    private static final long NO_TOKEN = 0;
    private static final String LOST = "LOST ";

    private final Process process;
    private final Path status;
    private final List<String> output = new ArrayList<>();
    private volatile long fencingToken = -1;

    private OtherJvmHolder(Process process, Path status) {
        this.process = process;
        this.status = status;
        Thread reader = new Thread(this::readOutput, "other-jvm-holder-output");
        reader.setDaemon(true);
        reader.start();
    }

    /**
     * Starts a child JVM (this JVM's class path) that takes {@code key} as {@code kind} in the store {@code connection} names
     * (connected by {@code factory}), and returns once it holds the key.
     *
     * @param leaseTime the watchdog-managed lease of the child's manager, renewed every third of it
     * @throws AssertionError when the child did not take the key within a minute (its output is in the message)
     */
    public static OtherJvmHolder start(Class<? extends BackendFactory> factory, String connection, String key, LockKind kind,
                                       String instanceId, String holderThread, Duration leaseTime) throws Exception {
        Path status = Files.createTempFile("dlock-other-jvm-", ".status");
        Process process = new ProcessBuilder(ChildJvm.command(OtherJvmHolder.class, factory.getName(), connection, key,
                kind.mode().name(), Integer.toString(kind.permits()), instanceId, holderThread,
                Long.toString(leaseTime.toMillis()), status.toString())).redirectErrorStream(true).start();
        OtherJvmHolder holder = new OtherJvmHolder(process, status);
        if (!holder.awaitHeld(Duration.ofSeconds(60))) {
            holder.close();
            throw new AssertionError("the other JVM did not take key '" + key + "'; its output:\n" + holder.output());
        }
        return holder;
    }

    /** The fencing token the child's acquisition got; 0 for a store that issues none. */
    public long fencingToken() {
        return fencingToken;
    }

    /** Waits for the child to exit and answers its exit code ({@link #EXIT_LEASE_LOST} when told of the loss). */
    public int awaitExit(Duration timeout) throws InterruptedException {
        if (!process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS)) {
            throw new AssertionError("the other JVM is still running after " + timeout + "; its output:\n" + output());
        }
        return process.exitValue();
    }

    /** What the child reported and logged so far, for messages. */
    public String output() {
        String reported;
        try {
            reported = Files.readString(status);
        } catch (Exception e) {
            reported = "(status unreadable: " + e + ")";
        }
        synchronized (output) {
            return reported + String.join("\n", output);
        }
    }

    /** Kills the child if it still runs, and removes its status file. */
    @Override
    public void close() {
        process.destroyForcibly();
        try {
            Files.deleteIfExists(status);
        } catch (Exception e) {
            // a temporary file: the OS cleans it up
        }
    }

    /** Polls the status file (every 10 ms, the child writes it once) until the child reports the key held or exits. */
    private boolean awaitHeld(Duration timeout) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - deadline < 0) {
            String reported = Files.readString(status, StandardCharsets.UTF_8);
            // Only whole lines: the child's write may be seen half done.
            for (String line : reported.substring(0, reported.lastIndexOf('\n') + 1).split("\n")) {
                if (line.startsWith(HELD)) {
                    fencingToken = Long.parseLong(line.substring(HELD.length()).trim());
                    return true;
                }
            }
            if (!process.isAlive()) {
                return false;
            }
            Thread.sleep(10);
        }
        return false;
    }

    private void readOutput() {
        try (BufferedReader in = new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                synchronized (output) {
                    output.add(line);
                }
            }
        } catch (Exception e) {
            synchronized (output) {
                output.add("(output unreadable: " + e + ")");
            }
        }
    }

    /**
     * The child: {@code factory connection key mode permits instanceId holderThread leaseMillis statusFile}. Writes
     * {@code HELD <token>} to the status file once it holds the key, {@code LOST <reason>} when its engine reports the
     * lease lost.
     */
    public static void main(String[] args) throws Exception {
        BackendFactory factory = (BackendFactory) Class.forName(args[0]).getConstructor().newInstance();
        LockKind.Mode mode = LockKind.Mode.valueOf(args[3]);
        LockKind kind = mode == LockKind.Mode.PERMITS ? LockKind.permits(Integer.parseInt(args[4])) : LockKind.of(mode);
        CountDownLatch lost = new CountDownLatch(1);
        LockBackend backend = factory.create(args[1]);
        LockManager locks = LockManager.builder(backend).instanceId(args[5]).leaseTime(Duration.ofMillis(Long.parseLong(args[7])))
                .listener(new LockListener() {
                    @Override
                    public void onLeaseLost(String lockName, String key, String reason) {
                        report(args[8], LOST + reason);
                        lost.countDown();
                    }
                }).build();
        Thread holder = new Thread(() -> {
            try {
                LockHandle handle = locks.acquire(LockRequest.builder(args[2]).kind(kind).waitTime(Duration.ofSeconds(30)).build());
                report(args[8], HELD + (backend.capabilities().fencing() ? handle.fencingToken() : NO_TOKEN));
                lost.await(CHILD_PATIENCE.toMillis(), TimeUnit.MILLISECONDS);
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                report(args[8], "FAILED " + trace);
            }
        }, args[6]);
        holder.start();
        holder.join();
        // No clean shutdown: the parent reads the exit code; the store's copy is the parent's business now.
        Runtime.getRuntime().halt(lost.getCount() == 0 ? EXIT_LEASE_LOST : EXIT_STILL_HELD);
    }

    /** Appends one line to the child's status file; a write that fails leaves the parent waiting, then failing with the output. */
    private static void report(String statusFile, String line) {
        try {
            Files.writeString(Path.of(statusFile), line + "\n", StandardCharsets.UTF_8, StandardOpenOption.APPEND);
        } catch (Exception e) {
            // nothing to tell it with: the parent's wait runs out and shows the child's logs
        }
    }
}
