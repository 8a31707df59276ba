package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import dev.dlock.core.spi.StoredHolder;

import java.time.Duration;
import java.time.Instant;

/**
 * Who holds a key, as the store records it: the instance (JVM) that took it, the thread or asynchronous flow that
 * took it there, when (that instance's wall clock), and how long the lease has left in the store. After local
 * hand-offs within one instance, {@code holder} and {@code acquiredAt} name the acquisition that took the key from the
 * store; the instance is right throughout, since the key never left it.
 *
 * @param instance         the instance id ({@code LockManager.Builder.instanceId}, by default host name and process id)
 * @param holder           the thread or flow name (at most 48 printable ASCII characters)
 * @param acquiredAt       when the key was taken, by the holder instance's clock; null when the token does not say
 * @param leaseRemaining   the lease the store still gives it; null for a session-kept lease (no expiry)
 * @param owner            the owner token itself: whoever has it can release the key, so {@link #toString()} leaves it
 *                         out (a holder logged or shown is never a way to release the lock)
 */
public record LockHolder(String instance, String holder, @Nullable Instant acquiredAt, @Nullable Duration leaseRemaining, String owner) {

    /** Decodes a stored holder's owner token; a token of another format is reported with unknown instance and holder. */
    public static LockHolder of(StoredHolder stored) {
        Duration remaining = stored.remainingTtlMillis() == StoredHolder.NO_EXPIRY ? null : Duration.ofMillis(stored.remainingTtlMillis());
        String owner = stored.owner();
        String[] parts = owner.split("/", 4);
        if (parts.length == 4) {
            try {
                return new LockHolder(parts[0], parts[1], Instant.ofEpochMilli(Long.parseLong(parts[2], 36)), remaining, owner);
            } catch (NumberFormatException | java.time.DateTimeException e) {
                // not one of ours: fall through
            }
        }
        return new LockHolder("unknown", "unknown", null, remaining, owner);
    }

    /** The holder as logs and diagnostics show it: every component but the owner token. */
    @Override
    public String toString() {
        return "LockHolder[instance=" + instance + ", holder=" + holder + ", acquiredAt=" + acquiredAt
                + ", leaseRemaining=" + leaseRemaining + "]";
    }
}
