package dev.dlock.core.spi;

import java.util.Objects;

/**
 * One holder of a key as the store sees it: the owner token it was taken with, and how long its lease has left in
 * the store ({@link #NO_EXPIRY} for a lease the store keeps while its holder's session lives).
 */
public record StoredHolder(String owner, long remainingTtlMillis) {

    /** The remaining lease of a session-kept hold: it lasts as long as the holder's session. */
    public static final long NO_EXPIRY = -1;

    /** Refuses a holder without an owner. */
    public StoredHolder {
        Objects.requireNonNull(owner, "owner");
    }
}
