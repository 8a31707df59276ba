package dev.dlock.core.spi;

/** The store's answer for one entry of a renewal batch. */
public enum RenewalResult {
    /** The owner matched and the lease was extended. */
    RENEWED,
    /** The key no longer exists: it expired or was deleted. */
    EXPIRED,
    /** The key is held by another owner. */
    TAKEN
}
