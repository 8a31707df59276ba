package dev.dlock.core;

import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issues owner tokens: a random 128-bit id drawn once per manager plus a sequence number, so every
 * acquisition gets a token never used before by any JVM, without a SecureRandom call (and its lock)
 * on every acquire.
 */
final class OwnerTokens {

    private final String instanceId = UUID.randomUUID().toString();
    private final AtomicLong sequence = new AtomicLong();

    String next() {
        return instanceId + ':' + Long.toString(sequence.incrementAndGet(), 36);
    }
}
