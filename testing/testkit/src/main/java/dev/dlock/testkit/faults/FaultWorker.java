package dev.dlock.testkit.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.testkit.BackendFactory;

/**
 * One JVM of the fault suite's workload: threads that lock random keys (mostly the hot ones) and, inside
 * each critical section, write to the referee with their fencing token, then release and tell the referee
 * whether the release reported the lease lost. Runs until its standard input closes.
 *
 * <p>Arguments: {@code factoryClass connection refereePort workerIndex threads keyPrefix hotKeys coldKeys seed leaseMillis maxHoldMillis}.
 */
public final class FaultWorker {

    private static final Logger log = LoggerFactory.getLogger(FaultWorker.class);
    private FaultWorker() {
    }

    /** Child-process entry point; see the class comment for the arguments. */
    public static void main(String[] args) throws Exception {
        BackendFactory factory = (BackendFactory) Class.forName(args[0]).getDeclaredConstructor().newInstance();
        String connection = args[1];
        int refereePort = Integer.parseInt(args[2]);
        int worker = Integer.parseInt(args[3]);
        int threads = Integer.parseInt(args[4]);
        String keyPrefix = args[5];
        int hotKeys = Integer.parseInt(args[6]);
        int coldKeys = Integer.parseInt(args[7]);
        long seed = Long.parseLong(args[8]);
        long leaseMillis = Long.parseLong(args[9]);
        int maxHoldMillis = Integer.parseInt(args[10]);

        LockBackend backend = factory.create(connection);
        LockManager locks = LockManager.builder(backend).leaseTime(Duration.ofMillis(leaseMillis)).build();
        List<Thread> running = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            SplittableRandom random = new SplittableRandom(seed * 1_000_003L + worker * 101L + t);
            String name = "w" + worker + "-t" + t;
            Thread thread = new Thread(() -> work(locks, refereePort, name, random, keyPrefix, hotKeys, coldKeys, maxHoldMillis), name);
            thread.start();
            running.add(thread);
        }
        // The suite stops a worker by closing its standard input; a killed worker never gets here.
        while (System.in.read() >= 0) {
            // Ignore input; only its end matters.
        }
        for (Thread thread : running) {
            thread.interrupt();
        }
        for (Thread thread : running) {
            thread.join(TimeUnit.SECONDS.toMillis(30));
        }
        locks.close();
        factory.dispose(backend);
        System.exit(0);
    }

    private static void work(LockManager locks, int refereePort, String name, SplittableRandom random, String keyPrefix,
                             int hotKeys, int coldKeys, int maxHoldMillis) {
        try (Socket socket = new Socket(InetAddress.getLoopbackAddress(), refereePort);
             BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8)) {
            Referral referee = line -> {
                out.println(line);
                String reply = in.readLine();
                if (reply == null) {
                    throw new IOException("referee closed the connection");
                }
                return reply;
            };
            long sequence = 0;
            while (!Thread.currentThread().isInterrupted()) {
                // Four in five sections go to the hot keys, where holders contend.
                int index = random.nextInt(5) > 0 ? random.nextInt(hotKeys) : hotKeys + random.nextInt(coldKeys);
                section(locks, referee, name + "-" + sequence++, keyPrefix + index, random.nextInt(maxHoldMillis + 1));
            }
        } catch (IOException e) {
            log.error("worker thread {} lost the referee: {}", name, e.toString());
        }
    }

    /** One request and its reply line, to the referee. */
    private interface Referral {
        String ask(String line) throws IOException;
    }

    private static void section(LockManager locks, Referral referee, String id, String key, int holdMillis) throws IOException {
        LockHandle lock;
        try {
            lock = locks.acquire(key, Duration.ofSeconds(2));
        } catch (LockNotAcquiredException e) {
            if (e.reason() != LockNotAcquiredException.Reason.INTERRUPTED) {
                referee.ask("ERROR acquire-" + e.reason().name().toLowerCase());
            }
            return;
        } catch (LockBackendException e) {
            referee.ask("ERROR acquire-store-error");
            pause(100);
            return;
        } catch (RuntimeException e) {
            referee.ask("ERROR acquire-" + e.getClass().getSimpleName());
            log.error("unexpected acquire failure on {}", key, e);
            pause(100);
            return;
        }
        long token = lock.fencingToken();
        boolean lost = false;
        try {
            if ("OK".equals(referee.ask("ENTER " + key + " " + token + " " + id))) {
                pause(holdMillis);
                referee.ask("WRITE " + key + " " + token + " " + id);
            }
        } finally {
            referee.ask("LEAVE " + key + " " + token + " " + id);
            try {
                lock.close();
            } catch (LockLostException e) {
                lost = true;
            } catch (LockBackendException e) {
                referee.ask("ERROR release-store-error");
            } catch (RuntimeException e) {
                referee.ask("ERROR release-" + e.getClass().getSimpleName());
                log.error("unexpected release failure on {}", key, e);
            }
            referee.ask("EXIT " + key + " " + token + " " + id + " " + (lost ? 1 : 0));
        }
    }

    private static void pause(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
