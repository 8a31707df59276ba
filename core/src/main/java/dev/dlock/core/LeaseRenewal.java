package dev.dlock.core;

/** One entry of a renewal batch: extend {@code key} to {@code leaseMillis} if {@code owner} still holds it. */
public record LeaseRenewal(String key, String owner, long leaseMillis) {
}
