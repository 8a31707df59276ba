package dev.dlock.core.inmemory;

import java.util.concurrent.ConcurrentHashMap;
import java.util.function.ToLongFunction;

/**
 * One kind of the in-memory store's records: one per key, changed only inside the map's compute of that key, and
 * forgotten by the store's sweep once idle longer than the retention.
 *
 * @param <R> the record of one key
 */
abstract class KeyRecords<R> {

    /** Whether a record has been idle longer than the retention at {@code now}. */
    interface Idle<R> {
        boolean forgettableAt(R record, long now);
    }

    final ConcurrentHashMap<String, R> records = new ConcurrentHashMap<>();
    private final ToLongFunction<R> lastToken;
    private final Idle<R> idle;

    /** Records whose last token {@code lastToken} reads, and which {@code idle} says may be forgotten. */
    KeyRecords(ToLongFunction<R> lastToken, Idle<R> idle) {
        this.lastToken = lastToken;
        this.idle = idle;
    }

    /** The last token {@code key}'s record has (0 when none is remembered). */
    long lastToken(String key) {
        R record = records.get(key);
        return record != null ? lastToken.applyAsLong(record) : 0;
    }

    int size() {
        return records.size();
    }

    /** Forgets the records idle longer than the retention. */
    void sweep(long now) {
        for (String key : records.keySet()) {
            records.computeIfPresent(key, (k, record) -> idle.forgettableAt(record, now) ? null : record);
        }
    }

    /** Forgets every record. */
    void clear() {
        records.clear();
    }
}
