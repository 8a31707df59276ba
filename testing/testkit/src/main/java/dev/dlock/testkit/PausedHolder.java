package dev.dlock.testkit;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;

/**
 * The fencing scenario with a real pause: a first holder takes a key with a short fixed lease and
 * blocks on a latch (its lease runs out in the store meanwhile); a second holder, through another
 * lock manager (another instance), waits for the key, gets a larger token and writes; then the first
 * resumes and tries its write with its old token. Nothing is timed by sleeping: the second holder's
 * acquisition is the proof that the first lease ended in the store.
 */
public final class PausedHolder {

    /** A write made under a fencing token; it may throw to refuse. */
    @FunctionalInterface
    public interface FencedWrite {
        /** Writes as the holder of {@code fencingToken}. */
        void write(long fencingToken) throws Exception;
    }

    /** What happened: both tokens and what the first holder's late write threw (null when it was accepted). */
    public record Outcome(long pausedToken, long newerToken, Throwable pausedWriteFailure) {
    }

    private PausedHolder() {
    }

    /**
     * Runs the scenario on {@code key}: the paused holder acquires through {@code first} with a fixed lease of
     * {@code lease}, the newer one through {@code second}, waiting up to 30 seconds.
     */
    public static Outcome run(LockManager first, LockManager second, String key, Duration lease,
                              FencedWrite pausedWrite, FencedWrite newerWrite) throws Exception {
        return run(first, second, key, lease, token -> { }, pausedWrite, newerWrite);
    }

    /**
     * Runs the scenario with {@code beforePause} run by the first holder right after it acquired (to load
     * what it will write later, as a real holder would before a GC pause).
     */
    public static Outcome run(LockManager first, LockManager second, String key, Duration lease, FencedWrite beforePause,
                              FencedWrite pausedWrite, FencedWrite newerWrite) throws Exception {
        CountDownLatch acquired = new CountDownLatch(1);
        CountDownLatch resume = new CountDownLatch(1);
        long[] pausedToken = new long[1];
        CompletableFuture<Throwable> paused = CompletableFuture.supplyAsync(() -> {
            LockHandle handle = first.acquire(LockRequest.builder(key).leaseTime(lease).build());
            pausedToken[0] = handle.fencingToken();
            Throwable failure = null;
            try {
                try {
                    beforePause.write(pausedToken[0]);
                } finally {
                    acquired.countDown();
                }
                if (!resume.await(60, TimeUnit.SECONDS)) {
                    throw new IllegalStateException("the newer holder never let the paused one resume");
                }
                pausedWrite.write(pausedToken[0]);
            } catch (Throwable t) {
                failure = t;
            }
            try {
                handle.close(); // the lease is lost by now: the close reports it, which is not under test here
            } catch (RuntimeException expected) {
                // LockLostException under the default policy
            }
            return failure;
        }, command -> new Thread(command, "paused-holder").start());
        if (!acquired.await(30, TimeUnit.SECONDS)) {
            throw new IllegalStateException("the first holder did not acquire " + key);
        }
        long newerToken;
        try (LockHandle newer = second.acquire(LockRequest.builder(key).waitTime(Duration.ofSeconds(30)).build())) {
            newerToken = newer.fencingToken();
            newerWrite.write(newerToken);
        } finally {
            resume.countDown();
        }
        try {
            return new Outcome(pausedToken[0], newerToken, paused.get(60, TimeUnit.SECONDS));
        } catch (ExecutionException | TimeoutException e) {
            throw new IllegalStateException("the paused holder did not finish", e);
        }
    }
}
