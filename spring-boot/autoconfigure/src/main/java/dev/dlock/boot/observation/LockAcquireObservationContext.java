package dev.dlock.boot.observation;

import dev.dlock.core.LockKind;

/** The context of {@link LockObservationDocumentation#ACQUIRE}: one acquisition, its wait included, and how it ended. */
public class LockAcquireObservationContext extends LockObservationContext {

    private volatile String result;

    /** The context of an acquisition of {@code key} under lock {@code lockName}, as {@code kind}. */
    public LockAcquireObservationContext(String lockName, String key, LockKind kind) {
        super(lockName, key, kind);
    }

    /**
     * How the acquisition ended ({@code acquired}, {@code timeout}, {@code aborted}, {@code error}: the values of
     * {@link dev.dlock.boot.metrics.LockMetrics#TAG_RESULT}); null while it waits.
     */
    public String getResult() {
        return result;
    }

    /** Records how the acquisition ended. */
    public void setResult(String result) {
        this.result = result;
    }
}
