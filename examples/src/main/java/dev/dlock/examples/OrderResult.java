package dev.dlock.examples;

/** What became of an order; {@code fencingToken} is 0 when no lock was held. */
public record OrderResult(String orderId, Status status, long fencingToken) {

    /** The outcome of an order. */
    public enum Status {
        /** An item was sold. */
        SOLD,
        /** The lock was taken, but nothing was left. */
        SOLD_OUT,
        /** The product sold out while the order waited for the lock (abortIf). */
        ABORTED,
        /** The lock could not be had within the wait time. */
        REJECTED,
        /** The ledger refused a stale fencing token (a holder that lost its lease). */
        FENCED_OFF
    }
}
