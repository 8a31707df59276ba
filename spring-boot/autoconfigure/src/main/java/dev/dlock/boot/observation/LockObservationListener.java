package dev.dlock.boot.observation;

import java.time.Duration;

import dev.dlock.boot.metrics.LockMetrics;
import dev.dlock.core.AcquisitionContext;
import dev.dlock.core.LockListener;
import io.micrometer.observation.Observation;
import io.micrometer.observation.ObservationRegistry;

/**
 * Turns lock events into Micrometer observations ({@link LockObservationDocumentation}): {@code dlock.lock.acquire}
 * around each acquisition, its wait included, and {@code dlock.lock.hold} from acquisition to release, both children of
 * the observation current on the thread that asked for the lock. With a meter observation handler (Spring Boot's, when
 * the application has a MeterRegistry) they are also dlock's timers.
 *
 * <p>Each acquisition's observations travel with it, on its {@link AcquisitionContext}: an asynchronous acquisition
 * that starts on the caller's thread and ends on a dlock thread stops the observation it started, and two readers (or
 * permit holders) of one key each end their own hold. No observation is opened in a scope, so none is left current on
 * any thread.
 */
public class LockObservationListener implements LockListener {

    private final ObservationRegistry registry;
    /** The application's conventions, or null: then a global one the registry has, else the defaults. */
    private final LockAcquireObservationConvention acquireConvention;
    private final LockHoldObservationConvention holdConvention;
    private final LockAcquireObservationConvention defaultAcquireConvention;
    private final LockHoldObservationConvention defaultHoldConvention;

    /** What this listener keeps on one acquisition: the parent, then the acquire observation, then the hold's. */
    private static final class Observed {
        final Observation parent;
        final LockAcquireObservationContext acquireContext;
        final Observation acquire;
        volatile LockHoldObservationContext holdContext;
        volatile Observation hold;

        Observed(Observation parent, LockAcquireObservationContext acquireContext, Observation acquire) {
            this.parent = parent;
            this.acquireContext = acquireContext;
            this.acquire = acquire;
        }
    }

    /** Observes into {@code registry} with the default conventions; {@code keyInSpans} false keeps lock keys out of spans. */
    public LockObservationListener(ObservationRegistry registry, boolean keyInSpans) {
        this(registry, null, null, keyInSpans);
    }

    /**
     * Observes into {@code registry} with the given conventions (null for the default ones, which {@code keyInSpans}
     * false makes keep lock keys out of spans).
     */
    public LockObservationListener(ObservationRegistry registry, LockAcquireObservationConvention acquireConvention,
                                   LockHoldObservationConvention holdConvention, boolean keyInSpans) {
        this.registry = registry;
        this.acquireConvention = acquireConvention;
        this.holdConvention = holdConvention;
        this.defaultAcquireConvention = new DefaultLockAcquireObservationConvention(keyInSpans);
        this.defaultHoldConvention = new DefaultLockHoldObservationConvention(keyInSpans);
    }

    @Override
    public void onAcquireAttempt(AcquisitionContext acquisition) {
        // The caller's observation, read on the caller's thread: the hold, which may start on a dlock thread, hangs under it too.
        Observation parent = registry.getCurrentObservation();
        LockAcquireObservationContext context = new LockAcquireObservationContext(acquisition.lockName(), acquisition.key(), acquisition.kind());
        Observation acquire = LockObservationDocumentation.ACQUIRE
                .observation(acquireConvention, defaultAcquireConvention, () -> context, registry)
                .parentObservation(parent)
                .start();
        acquisition.put(this, new Observed(parent, context, acquire));
    }

    /** Ends the acquire observation and starts the hold's; tags the token only when the store issued it with the acquisition. */
    @Override
    public void onAcquired(AcquisitionContext acquisition, long fencingToken, Duration waited) {
        Observed observed = acquisition.get(this, Observed.class);
        if (observed == null) {
            return;
        }
        observed.acquireContext.setResult(LockMetrics.RESULT_ACQUIRED);
        observed.acquireContext.setFencingToken(fencingToken);
        observed.acquire.stop();
        LockHoldObservationContext context = new LockHoldObservationContext(acquisition.lockName(), acquisition.key(), acquisition.kind());
        context.setFencingToken(fencingToken);
        observed.holdContext = context;
        observed.hold = LockObservationDocumentation.HOLD
                .observation(holdConvention, defaultHoldConvention, () -> context, registry)
                .parentObservation(observed.parent)
                .start();
    }

    @Override
    public void onAcquireFailed(AcquisitionContext acquisition, AcquireFailure failure, Duration waited, Throwable error) {
        Observed observed = acquisition.get(this, Observed.class);
        if (observed == null) {
            return;
        }
        acquisition.put(this, null);
        observed.acquireContext.setResult(LockMetrics.resultOf(failure));
        if (error != null) {
            observed.acquire.error(error);
        }
        observed.acquire.stop();
    }

    /** Records the loss on the hold, which its release (reported after the loss) ends. */
    @Override
    public void onLeaseLost(AcquisitionContext acquisition, String reason) {
        Observed observed = acquisition.get(this, Observed.class);
        LockHoldObservationContext hold = observed == null ? null : observed.holdContext;
        if (hold != null) {
            hold.setLeaseLostReason(reason);
        }
    }

    @Override
    public void onReleased(AcquisitionContext acquisition, Duration held) {
        Observed observed = acquisition.get(this, Observed.class);
        if (observed == null || observed.hold == null) {
            return;
        }
        acquisition.put(this, null);
        observed.hold.stop();
    }
}
