package dev.dlock.boot.observation;

import dev.dlock.core.LockKind;

/** The context of {@link LockObservationDocumentation#HOLD}: one hold, from acquisition to release. */
public class LockHoldObservationContext extends LockObservationContext {

    private volatile String leaseLostReason;

    /** The context of a hold of {@code key} under lock {@code lockName}, as {@code kind}. */
    public LockHoldObservationContext(String lockName, String key, LockKind kind) {
        super(lockName, key, kind);
    }

    /** Why the lease was lost while held, or null while it was not. */
    public String getLeaseLostReason() {
        return leaseLostReason;
    }

    /** Records that the lease was lost while held, and why. */
    public void setLeaseLostReason(String leaseLostReason) {
        this.leaseLostReason = leaseLostReason;
    }
}
