package dev.dlock.aspect;

import dev.dlock.core.DistributedLockException;

/** A {@code @DistributedLock} annotation is invalid; the message names the class, the method and the attribute. */
public class LockAnnotationException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    /** Creates the exception with a message naming class, method and attribute. */
    public LockAnnotationException(String message) {
        super(message);
    }

    /** Creates the exception with a message naming class, method and attribute, and the cause. */
    public LockAnnotationException(String message, Throwable cause) {
        super(message, cause);
    }
}
