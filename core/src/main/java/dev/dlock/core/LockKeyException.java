package dev.dlock.core;

/** A lock key is null, blank, or too long; nothing was locked. */
public class LockKeyException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception with a message naming the key (or the expression that produced it). */
    public LockKeyException(String message) {
        super(message);
    }
}
