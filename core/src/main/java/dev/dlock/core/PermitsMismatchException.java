package dev.dlock.core;

/**
 * A permits acquisition asked for a different number of permits than the key's holders in the store took it with: two
 * applications (or two versions of one) disagree on the semaphore's size, which would let the larger number in. Nothing
 * is taken; every user of a key must ask for the same number.
 */
public class PermitsMismatchException extends DistributedLockException {

    private static final long serialVersionUID = 1L;

    private final String key;
    private final int held;
    private final int asked;

    /** Creates the exception for {@code key}, held with {@code held} permits, asked for with {@code asked}. */
    public PermitsMismatchException(String key, int held, int asked) {
        super("Key '" + key + "' is held with " + held + " permits in the store; this acquisition asked for " + asked
                + ": every user of a key must ask for the same number of permits (permits(" + held + ") here, or change "
                + "them all once the key is free). Nothing was taken");
        this.key = key;
        this.held = held;
        this.asked = asked;
    }

    /** The key. */
    public String key() {
        return key;
    }

    /** The number of permits the key's holders took it with. */
    public int held() {
        return held;
    }

    /** The number this acquisition asked for. */
    public int asked() {
        return asked;
    }
}
