package dev.dlock.core;

import java.nio.charset.StandardCharsets;

/**
 * What a lock key is: the rules every store relies on (not blank, at most {@value #MAX_KEY_BYTES} UTF-8 bytes; any
 * other character is allowed, the stores map keys to their own layout), and the form the annotation gives its keys,
 * {@code <name>:<key>}, which the actuator endpoint reads back.
 */
public final class LockKeys {

    /** The longest key accepted, in UTF-8 bytes. */
    public static final int MAX_KEY_BYTES = 1024;

    private LockKeys() {
    }

    /** The key {@code key} of lock {@code lockName} as the annotation gives it to the manager: {@code <name>:<key>}. */
    public static String named(String lockName, String key) {
        return lockName + ":" + key;
    }

    /** Whether {@code key} has the form of one of lock {@code lockName}'s annotation keys ({@link #named}). */
    public static boolean isNamedKeyOf(String lockName, String key) {
        return key.startsWith(named(lockName, ""));
    }

    /**
     * Checks {@code key} against the rules every store relies on; returns it unchanged.
     *
     * @throws LockKeyException when the key is null, blank or longer than {@value #MAX_KEY_BYTES} bytes
     */
    public static String valid(String key) {
        if (key == null) {
            throw new LockKeyException("lock key is null");
        }
        if (key.isBlank()) {
            throw new LockKeyException("lock key is blank");
        }
        // A char takes at most 3 UTF-8 bytes, so short keys need no encoding to be checked.
        if (key.length() * 3 > MAX_KEY_BYTES) {
            int bytes = key.getBytes(StandardCharsets.UTF_8).length;
            if (bytes > MAX_KEY_BYTES) {
                throw new LockKeyException("lock key is " + bytes + " bytes long, the limit is " + MAX_KEY_BYTES
                        + ": '" + key.substring(0, 64) + "...'");
            }
        }
        return key;
    }
}
