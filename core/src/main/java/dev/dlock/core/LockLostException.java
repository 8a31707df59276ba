package dev.dlock.core;

/**
 * The lease ended before its holder released it: it expired, was deleted, was taken by another
 * owner, or could not be renewed. The critical section may have overlapped with another holder's.
 */
public class LockLostException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    private final String lockName;
    private final String key;

    /** Creates the exception for lock {@code lockName} on {@code key}, with why the lease was lost. */
    public LockLostException(String lockName, String key, String why) {
        super("Lock '" + lockName + "' on key '" + key + "' is lost: " + why);
        this.lockName = lockName;
        this.key = key;
    }

    /** The lock's static name. */
    public String lockName() {
        return lockName;
    }

    /** The key whose lease was lost. */
    public String key() {
        return key;
    }
}
