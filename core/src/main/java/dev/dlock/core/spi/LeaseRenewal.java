package dev.dlock.core.spi;

import dev.dlock.core.LockKind;

/** One entry of a renewal batch: extend {@code key}'s lock of {@code kind} to {@code leaseMillis} if {@code owner} still holds it. */
public record LeaseRenewal(String key, String owner, long leaseMillis, LockKind kind) {

    /** Refuses a renewal without a kind: the store keeps each kind apart. */
    public LeaseRenewal {
        java.util.Objects.requireNonNull(kind, "kind");
    }

    /** A renewal of an exclusive lock. */
    public LeaseRenewal(String key, String owner, long leaseMillis) {
        this(key, owner, leaseMillis, LockKind.EXCLUSIVE);
    }
}
