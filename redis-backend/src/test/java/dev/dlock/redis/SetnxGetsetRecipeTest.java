package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.testkit.redis.RedisServerProcess;
import redis.clients.jedis.RedisClient;

/**
 * The old Redis recipe — {@code SETNX key <expiry timestamp>}, and on failure {@code GET}, and if the
 * timestamp has passed {@code GETSET key <new expiry>} and compare — run against a real Redis, beside
 * the same scenarios through dlock's Redis store. The recipe fails the ways it is known for: a paused
 * holder wakes, writes, and deletes its successor's lock; a client whose clock runs ahead steals a live
 * lock; contenders' GETSETs overwrite the winner's expiry. dlock, on the same Redis, tells the paused
 * holder its lease was lost, lets a fencing-checked resource refuse its late write, never deletes a
 * successor's lock, and reads no client clock at all.
 */
class SetnxGetsetRecipeTest {

    private static RedisServerProcess redis;
    private static RedisClient client;

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
        client = RedisTestSupport.client(redis);
    }

    @AfterAll
    static void stopRedis() {
        client.close();
        redis.close();
    }

    /** The recipe as it was published, with a client clock that may be skewed. */
    private static final class TimestampRecipe {
        private final long timeoutMillis;
        private final long clockSkewMillis;
        final AtomicInteger overwrittenExpiries = new AtomicInteger();

        TimestampRecipe(long timeoutMillis, long clockSkewMillis) {
            this.timeoutMillis = timeoutMillis;
            this.clockSkewMillis = clockSkewMillis;
        }

        long now() {
            return System.currentTimeMillis() + clockSkewMillis;
        }

        /** Spins until acquired; returns the expiry it set. */
        long acquire(String key) throws InterruptedException {
            while (true) {
                long expiry = now() + timeoutMillis + 1;
                if (client.setnx(key, Long.toString(expiry)) == 1) {
                    return expiry;
                }
                String current = client.get(key);
                if (current != null && Long.parseLong(current) < now()) {
                    String previous = client.getSet(key, Long.toString(expiry));
                    if (current.equals(previous)) {
                        return expiry;
                    }
                    if (previous != null) {
                        // Lost the race, but the GETSET already replaced the winner's expiry with ours.
                        overwrittenExpiries.incrementAndGet();
                    }
                }
                Thread.sleep(5);
            }
        }

        /** The recipe's release: DEL, trusting that the lock is still ours. */
        void release(String key) {
            client.del(key);
        }
    }

    /**
     * A resource that records who is inside and judges writes. The test knows the true order of the
     * acquisitions; a write from an earlier holder after a later one wrote is stale. Without tokens the
     * resource must accept it; with fencing tokens it refuses a token lower than one it accepted.
     */
    private static final class Resource {
        final AtomicInteger inside = new AtomicInteger();
        final AtomicInteger overlaps = new AtomicInteger();
        final AtomicInteger staleAccepted = new AtomicInteger();
        final AtomicInteger staleRefused = new AtomicInteger();
        private final AtomicInteger acquisitions = new AtomicInteger();
        private int highestOrder = -1;
        private long highestToken = Long.MIN_VALUE;

        /** Enters the section; returns the acquisition's place in the true order. */
        int enter() {
            if (inside.incrementAndGet() > 1) {
                overlaps.incrementAndGet();
            }
            return acquisitions.getAndIncrement();
        }

        void exit() {
            inside.decrementAndGet();
        }

        /** A write without a token: the resource cannot tell a stale holder from the live one. */
        synchronized void write(int order) {
            if (order < highestOrder) {
                staleAccepted.incrementAndGet();
            }
            highestOrder = Math.max(highestOrder, order);
        }

        /** A write with a fencing token: refused when a higher token was accepted. */
        synchronized void write(int order, long token) {
            if (token < highestToken) {
                staleRefused.incrementAndGet();
                return;
            }
            if (order < highestOrder) {
                staleAccepted.incrementAndGet();
            }
            highestToken = token;
            highestOrder = Math.max(highestOrder, order);
        }
    }

    // ------------------------------------------------------------------ a holder paused past its lock's life

    @Test
    void theRecipeLetsAPausedHolderWriteAndDeleteItsSuccessorsLock() throws Exception {
        String key = "recipe:paused:" + UUID.randomUUID();
        TimestampRecipe recipe = new TimestampRecipe(300, 0);
        Resource resource = new Resource();
        CountDownLatch firstHolds = new CountDownLatch(1);
        CountDownLatch secondInside = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(3);
        try {
            Future<?> first = threads.submit(() -> {
                recipe.acquire(key);
                int order = resource.enter();
                resource.write(order);
                firstHolds.countDown();
                Thread.sleep(600); // paused past the 300 ms timeout (a GC pause, a stopped VM)
                resource.write(order);
                resource.exit();
                recipe.release(key); // deletes whoever holds the key now
                return null;
            });
            Future<?> second = threads.submit(() -> {
                firstHolds.await();
                recipe.acquire(key);
                int order = resource.enter();
                resource.write(order);
                secondInside.countDown();
                Thread.sleep(800);
                resource.write(order);
                resource.exit();
                recipe.release(key);
                return null;
            });
            Future<?> third = threads.submit(() -> {
                secondInside.await();
                recipe.acquire(key);
                int order = resource.enter();
                resource.write(order);
                resource.exit();
                recipe.release(key);
                return null;
            });
            first.get(10, TimeUnit.SECONDS);
            second.get(10, TimeUnit.SECONDS);
            third.get(10, TimeUnit.SECONDS);
        } finally {
            threads.shutdownNow();
        }
        assertThat(resource.overlaps).as("sections that overlapped under the recipe (the paused holder, then the "
                + "holder whose lock it deleted)").hasValueGreaterThanOrEqualTo(2);
        assertThat(resource.staleAccepted).as("writes of a holder whose lock had passed on, accepted").hasValueGreaterThanOrEqualTo(2);
    }

    @Test
    void dlockTellsThePausedHolderItLostTheLockAndFencingRefusesItsWrite() throws Exception {
        String key = "dlock:paused:" + UUID.randomUUID();
        Resource resource = new Resource();
        List<Throwable> firstRelease = new ArrayList<>();
        CountDownLatch firstHolds = new CountDownLatch(1);
        CountDownLatch secondInside = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(3);
        try (LockManager one = manager(); LockManager two = manager(); LockManager three = manager()) {
            Future<?> first = threads.submit(() -> {
                // A fixed 300 ms lease stands for the paused process: a watchdog in a paused JVM renews nothing.
                LockHandle lock = one.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).leaseTime(Duration.ofMillis(300)).build());
                int order = resource.enter();
                resource.write(order, lock.fencingToken());
                firstHolds.countDown();
                Thread.sleep(600);
                resource.write(order, lock.fencingToken());
                resource.exit();
                try {
                    lock.close();
                } catch (LockLostException e) {
                    firstRelease.add(e);
                }
                return null;
            });
            Future<?> second = threads.submit(() -> {
                firstHolds.await();
                try (LockHandle lock = two.acquire(key, Duration.ofSeconds(5))) {
                    int order = resource.enter();
                    resource.write(order, lock.fencingToken());
                    secondInside.countDown();
                    Thread.sleep(800);
                    resource.write(order, lock.fencingToken());
                    resource.exit();
                }
                return null;
            });
            Future<?> third = threads.submit(() -> {
                secondInside.await();
                try (LockHandle lock = three.acquire(key, Duration.ofSeconds(5))) {
                    int order = resource.enter();
                    resource.write(order, lock.fencingToken());
                    resource.exit();
                }
                return null;
            });
            first.get(10, TimeUnit.SECONDS);
            second.get(10, TimeUnit.SECONDS);
            third.get(10, TimeUnit.SECONDS);
        } finally {
            threads.shutdownNow();
        }
        assertThat(firstRelease).as("the paused holder is told at release").singleElement().isInstanceOf(LockLostException.class);
        assertThat(resource.staleRefused).as("the paused holder's late write, refused by its token").hasValue(1);
        assertThat(resource.staleAccepted).as("writes of a holder whose lock had passed on, accepted").hasValue(0);
        // Only the pause itself overlaps (no lock service can stop a paused process); the successor's lock is never deleted.
        assertThat(resource.overlaps).as("sections that overlapped").hasValue(1);
    }

    // ------------------------------------------------------------------ a client whose clock runs ahead

    @Test
    void underTheRecipeAClientWhoseClockRunsAheadStealsALiveLock() throws Exception {
        String key = "recipe:skew:" + UUID.randomUUID();
        TimestampRecipe honest = new TimestampRecipe(1_000, 0);
        TimestampRecipe ahead = new TimestampRecipe(1_000, 2_000);
        Resource resource = new Resource();
        for (int round = 0; round < 5; round++) {
            CountDownLatch holding = new CountDownLatch(1);
            Thread holder = new Thread(() -> {
                try {
                    honest.acquire(key);
                    resource.enter();
                    holding.countDown();
                    Thread.sleep(200); // well inside its 1 s timeout
                    resource.exit();
                    honest.release(key);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            });
            holder.start();
            holding.await();
            ahead.acquire(key);
            resource.enter();
            resource.exit();
            ahead.release(key);
            holder.join();
        }
        assertThat(resource.overlaps).as("live locks stolen by the client 2 s ahead, of 5").hasValueGreaterThanOrEqualTo(4);
    }

    @Test
    void dlockReadsNoClientClockSoNoClientCanStealALiveLock() throws Exception {
        String key = "dlock:skew:" + UUID.randomUUID();
        Resource resource = new Resource();
        try (LockManager honest = manager(); LockManager other = manager()) {
            for (int round = 0; round < 5; round++) {
                CountDownLatch holding = new CountDownLatch(1);
                Thread holder = new Thread(() -> {
                    try (LockHandle lock = honest.acquire(key, Duration.ofSeconds(5))) {
                        resource.enter();
                        holding.countDown();
                        Thread.sleep(200);
                        resource.exit();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
                holder.start();
                holding.await();
                try (LockHandle lock = other.acquire(key, Duration.ofSeconds(5))) {
                    resource.enter();
                    resource.exit();
                }
                holder.join();
            }
        }
        assertThat(resource.overlaps).as("live locks taken by another client").hasValue(0);
    }

    // ------------------------------------------------------------------ contenders racing on an expired lock

    @Test
    void underTheRecipeTheContendersGetsetsOverwriteTheWinnersExpiry() throws Exception {
        String key = "recipe:race:" + UUID.randomUUID();
        int contenders = 8;
        client.set(key, Long.toString(System.currentTimeMillis() - 10_000)); // a crashed holder's expired timestamp
        TimestampRecipe recipe = new TimestampRecipe(60_000, 0);
        CyclicBarrier together = new CyclicBarrier(contenders);
        ExecutorService threads = Executors.newFixedThreadPool(contenders);
        AtomicInteger winners = new AtomicInteger();
        try {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < contenders; i++) {
                all.add(threads.submit(() -> {
                    String current = client.get(key);
                    together.await(); // every contender read the same expired timestamp
                    String previous = client.getSet(key, Long.toString(recipe.now() + 60_000));
                    if (current.equals(previous)) {
                        winners.incrementAndGet();
                    } else {
                        recipe.overwrittenExpiries.incrementAndGet();
                    }
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get(10, TimeUnit.SECONDS);
            }
        } finally {
            threads.shutdownNow();
        }
        assertThat(winners).as("contenders that got the lock").hasValue(1);
        assertThat(recipe.overwrittenExpiries).as("losers whose GETSET replaced the winner's expiry").hasValue(contenders - 1);
    }

    private final List<RedisLockBackend> backends = new ArrayList<>();

    /** A manager of its own, as another application would have; its backend is closed after the test. */
    private LockManager manager() {
        RedisLockBackend backend = RedisLockBackend.builder(client).build();
        backends.add(backend);
        return LockManager.builder(backend).build();
    }

    @AfterEach
    void closeBackends() {
        backends.forEach(RedisLockBackend::close);
    }
}
