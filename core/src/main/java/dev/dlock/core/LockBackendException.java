package dev.dlock.core;

/** The lock store could not be reached, timed out, or answered with an error; carries the client's exception as cause. */
public class LockBackendException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception for a failed store operation. */
    public LockBackendException(String message, Throwable cause) {
        super(message, cause);
    }
}
