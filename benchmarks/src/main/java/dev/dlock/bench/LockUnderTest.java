package dev.dlock.bench;

import java.util.function.Supplier;

/**
 * One lock library behind the same small interface, so every scenario runs every library the same
 * way. Implementations wait for a held key (up to a minute) rather than failing at once.
 */
public interface LockUnderTest extends AutoCloseable {

    /** The short name used in tables and charts, for example {@code redisson}. */
    String name();

    /** Takes {@code key}, waiting while another holder has it; closing the result releases it. */
    AutoCloseable lock(String key) throws Exception;

    /** Runs {@code body} holding {@code key}; the annotation adapter overrides this, the others lock and close. */
    default <T> T locked(String key, Supplier<T> body) throws Exception {
        try (AutoCloseable ignored = lock(key)) {
            return body.get();
        }
    }

    /** Whether the library keeps a held lock alive by renewing it (a watchdog or renewal task). */
    boolean renewsLeases();

    /** The Redis key this library stores {@code key} under, for checking after a hold that it did not lapse. */
    String storeKey(String key);

    /** Whether {@code threadName} is one of the library's own renewal threads, for thread CPU accounting. */
    default boolean isRenewalThread(String threadName) {
        return false;
    }

    /** Shuts the library's clients down. */
    @Override
    void close();
}
