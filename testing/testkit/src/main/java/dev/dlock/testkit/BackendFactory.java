package dev.dlock.testkit;

import dev.dlock.core.spi.LockBackend;

/**
 * Creates a backend from a connection string; lets the contract suite start a second JVM that
 * contends with the test JVM on the same store. Implementations need a public no-argument constructor.
 */
public interface BackendFactory {

    /** Connects a new backend (with its own client) to the store that {@code connection} names. */
    LockBackend create(String connection);

    /** Frees what {@link #create} made, including its client. */
    void dispose(LockBackend backend);
}
