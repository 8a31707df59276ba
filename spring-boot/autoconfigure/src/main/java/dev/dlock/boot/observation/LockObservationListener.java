package dev.dlock.boot.observation;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.Iterator;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.HeldLock;
import dev.dlock.core.LockListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Turns lock events into Micrometer observations, so a trace shows where a request waited for a lock
 * and how long it held it: {@value #ACQUIRE} around each acquisition (its wait included) and
 * {@value #HOLD} from acquisition to release, both children of the caller's current observation.
 *
 * <p>Tags: {@code lock.name} and {@code result} (the meters' values) are low-cardinality (they may become metric tags);
 * {@code lock.key} and {@code fencing.token} are high-cardinality, so they reach spans but never
 * meters; {@code fencing.token} is left out when the store issues the token only when the holder asks for it (Redis
 * exclusive locks). Driven by the same events as the meters, so both agree on counts.
 */
public class LockObservationListener implements LockListener {

    /** The start of every dlock observation's name (and of any meter a handler names after one). */
    public static final String NAME_PREFIX = "dlock.lock.";
    /** The observation around one acquisition, its wait included. */
    public static final String ACQUIRE = NAME_PREFIX + "acquire";
    /** The observation from acquisition to release. */
    public static final String HOLD = NAME_PREFIX + "hold";
    private static final String FENCING_TOKEN = "fencing.token";

    private final ObservationRegistry registry;
    private final boolean keyInSpans;
    /** The acquisitions in progress on each thread; events of one acquisition all run on the caller's thread. */
    private final ThreadLocal<Deque<Pending>> acquiring = ThreadLocal.withInitial(ArrayDeque::new);
    /** Holds by key: a key is held by at most one acquisition of a JVM at a time. */
    private final Map<String, Observation> holds = new ConcurrentHashMap<>();

    private record Pending(String key, Observation observation) {
    }

    /** Observes into {@code registry}; {@code keyInSpans} false keeps lock keys out of spans too (when keys carry personal data). */
    public LockObservationListener(ObservationRegistry registry, boolean keyInSpans) {
        this.registry = registry;
        this.keyInSpans = keyInSpans;
    }

    @Override
    public void onAcquireAttempt(String lockName, String key) {
        Observation observation = observation(ACQUIRE, "dlock acquire " + lockName, lockName, key).start();
        acquiring.get().push(new Pending(key, observation));
    }

    /** Tags the token only when the store issued it with the acquisition (0: issued when the holder asks, if ever). */
    @Override
    public void onAcquired(String lockName, String key, long fencingToken, Duration waited) {
        boolean issued = fencingToken != HeldLock.TOKEN_NOT_ISSUED;
        Observation acquire = takePending(key);
        if (acquire != null) {
            acquire.lowCardinalityKeyValue(LockMetrics.TAG_RESULT, LockMetrics.RESULT_ACQUIRED);
            if (issued) {
                acquire.highCardinalityKeyValue(FENCING_TOKEN, Long.toString(fencingToken));
            }
            acquire.stop();
        }
        Observation hold = observation(HOLD, "dlock hold " + lockName, lockName, key);
        if (issued) {
            hold.highCardinalityKeyValue(FENCING_TOKEN, Long.toString(fencingToken));
        }
        hold.start();
        Observation previous = holds.put(key, hold);
        if (previous != null) {
            // A hold whose release was never seen (a manager closed while holding): end it rather than leak it.
            previous.stop();
        }
    }

    @Override
    public void onAcquireFailed(String lockName, String key, AcquireFailure failure, Duration waited, Throwable error) {
        Observation acquire = takePending(key);
        if (acquire == null) {
            return;
        }
        acquire.lowCardinalityKeyValue(LockMetrics.TAG_RESULT, LockMetrics.resultOf(failure));
        if (error != null) {
            acquire.error(error);
        }
        acquire.stop();
    }

    @Override
    public void onReleased(String lockName, String key, Duration held) {
        Observation hold = holds.remove(key);
        if (hold != null) {
            hold.stop();
        }
    }

    @Override
    public void onLeaseLost(String lockName, String key, String reason) {
        Observation hold = holds.get(key);
        if (hold != null) {
            hold.event(Observation.Event.of("dlock.lease.lost", "lease lost: " + reason));
        }
    }

    private Observation observation(String name, String contextualName, String lockName, String key) {
        Observation observation = Observation.createNotStarted(name, registry)
                .contextualName(contextualName)
                .parentObservation(registry.getCurrentObservation())
                .lowCardinalityKeyValue(LockMetrics.TAG_LOCK_NAME, lockName);
        if (keyInSpans) {
            observation.highCardinalityKeyValue("lock.key", key);
        }
        return observation;
    }

    private Observation takePending(String key) {
        Deque<Pending> pending = acquiring.get();
        for (Iterator<Pending> it = pending.iterator(); it.hasNext(); ) {
            Pending next = it.next();
            if (next.key().equals(key)) {
                it.remove();
                if (pending.isEmpty()) {
                    acquiring.remove();
                }
                return next.observation();
            }
        }
        return null;
    }
}
