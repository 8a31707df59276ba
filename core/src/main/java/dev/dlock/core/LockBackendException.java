package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import java.util.regex.Pattern;

/**
 * The lock store could not be reached, timed out, or answered with an error. Its cause, if any, is
 * another dlock exception; the store client's own exception is named in the message and attached as
 * a suppressed exception (see {@link #storeFailure}).
 */
public class LockBackendException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    /**
     * Words that web frameworks read in an exception's innermost message as "the HTTP client hung up"
     * (Spring MVC's {@code DisconnectedClientHelper}), answering nothing instead of a server error.
     * In a store failure they describe the store's connection, so dlock writes them hyphenated.
     */
    /** The store client's exception behind this failure; null when dlock found the failure itself. */
    private transient Throwable storeException;

    private static final Pattern HANG_UP_WORDS = Pattern.compile("(?i)broken pipe|connection reset by peer");

    /** Creates the exception for a store failure dlock found itself; {@code cause} is an earlier dlock failure, or null. */
    public LockBackendException(String message, @Nullable DistributedLockException cause) {
        super(message == null ? null : HANG_UP_WORDS.matcher(message).replaceAll(words -> words.group().replace(' ', '-')),
                cause);
    }

    /**
     * The exception for {@code operation} (for example "Redis tryAcquire of key 'k' failed"), which
     * failed with the store client's {@code storeException}: the message ends with that exception's
     * class and message, and the exception itself is attached as suppressed, with its own causes, for
     * the stack trace. It is not the cause, because frameworks walk the cause chain for exception types
     * such as {@code EOFException} (a driver's, here) and take them for an HTTP client that went away.
     */
    public static LockBackendException storeFailure(String operation, Throwable storeException) {
        LockBackendException failure = new LockBackendException(operation + ": " + storeException, null);
        failure.storeException = storeException;
        failure.addSuppressed(storeException);
        return failure;
    }

    /**
     * The store client's exception behind this failure or the dlock failure it was caused by (a driver's
     * {@code SQLException}, say, to read its SQL state); null when dlock found the failure itself.
     */
    public @Nullable Throwable storeException() {
        if (storeException != null) {
            return storeException;
        }
        return getCause() instanceof LockBackendException earlier ? earlier.storeException() : null;
    }
}
