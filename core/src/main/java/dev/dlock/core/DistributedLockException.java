package dev.dlock.core;

/** Base of every exception dlock throws; unchecked. */
public class DistributedLockException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    /** Creates an exception with a message. */
    public DistributedLockException(String message) {
        super(message);
    }

    /** Creates an exception with a message and a cause. */
    public DistributedLockException(String message, Throwable cause) {
        super(message, cause);
    }
}
