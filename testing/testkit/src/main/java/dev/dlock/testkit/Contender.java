package dev.dlock.testkit;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * A lock contender that works the same in the test JVM and in a child JVM: in each critical section
 * it claims a marker file (an overlap if it already exists), increments a counter file non-atomically,
 * and appends its fencing token to a log, so the test can check exclusion and token order across processes.
 */
public final class Contender {

    private final Path dir;

    /** Works in {@code dir}, which holds the marker, counter and token files. */
    public Contender(Path dir) {
        this.dir = dir;
    }

    /** Runs {@code iterations} critical sections on {@code key}; returns the overlaps seen. */
    public int run(LockManager locks, String key, int iterations) throws IOException {
        int overlaps = 0;
        for (int i = 0; i < iterations; i++) {
            try (LockHandle lock = locks.acquire(key, Duration.ofSeconds(60))) {
                // A store without fencing tokens logs none; exclusion is still checked.
                overlaps += criticalSection(locks.capabilities().fencing() ? lock.fencingToken() : null);
            }
        }
        return overlaps;
    }

    private int criticalSection(Long fencingToken) throws IOException {
        Path marker = dir.resolve("inside");
        int overlap = 0;
        try {
            Files.createFile(marker);
        } catch (FileAlreadyExistsException e) {
            overlap = 1;
        }
        Path counter = dir.resolve("counter");
        int value = Files.exists(counter) ? Integer.parseInt(Files.readString(counter).trim()) : 0;
        Thread.yield();
        Files.writeString(counter, Integer.toString(value + 1));
        if (fencingToken != null) {
            Files.writeString(dir.resolve("tokens"), fencingToken + "\n", StandardCharsets.UTF_8,
                    StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        }
        if (overlap == 0) {
            Files.delete(marker);
        }
        return overlap;
    }

    /** The counter's value. */
    public int counter() throws IOException {
        Path counter = dir.resolve("counter");
        return Files.exists(counter) ? Integer.parseInt(Files.readString(counter).trim()) : 0;
    }

    /**
     * Child-process entry point: {@code <factory class> <connection> <key> <iterations> <dir>}.
     * Exits 0 with no overlaps, 3 with overlaps, 1 on error.
     */
    public static void main(String[] args) throws Exception {
        BackendFactory factory = (BackendFactory) Class.forName(args[0]).getDeclaredConstructor().newInstance();
        LockBackend backend = factory.create(args[1]);
        int overlaps;
        try (LockManager locks = LockManager.builder(backend).build()) {
            overlaps = new Contender(Path.of(args[4])).run(locks, args[2], Integer.parseInt(args[3]));
        } finally {
            factory.dispose(backend);
        }
        System.exit(overlaps == 0 ? 0 : 3);
    }
}
