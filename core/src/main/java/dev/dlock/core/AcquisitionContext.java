package dev.dlock.core;

import org.jspecify.annotations.Nullable;
import java.util.Arrays;
import java.util.Objects;

/**
 * One acquisition as its listeners see it: the engine passes the same object to every event of the acquisition and of
 * the hold it leads to, from {@link LockListener#onAcquireAttempt(AcquisitionContext)} to
 * {@link LockListener#onReleased(AcquisitionContext, java.time.Duration)}, whichever thread reports each. A listener
 * that pairs events (a start and its end) keeps what it needs here with {@link #put} and {@link #get}: an
 * asynchronous acquisition starts on the caller's thread and ends on a dlock thread, and two readers (or permit
 * holders) of one key are two acquisitions, so neither the thread nor the key tells them apart.
 */
public final class AcquisitionContext {

    private static final Object[] NONE = {};

    private final String lockName;
    private final String key;
    private final LockKind kind;
    /**
     * Slot, value, slot, value...; guarded by this. Events of one acquisition may come from two threads at once (a loss
     * found by the watchdog during the release).
     */
    private Object[] attachments = NONE;

    /** The acquisition of {@code key} under lock {@code lockName}, as {@code kind}; public for tests of a listener. */
    public AcquisitionContext(String lockName, String key, LockKind kind) {
        this.lockName = Objects.requireNonNull(lockName, "lockName");
        this.key = Objects.requireNonNull(key, "key");
        this.kind = Objects.requireNonNull(kind, "kind");
    }

    /** The lock's static name (the metrics tag). */
    public String lockName() {
        return lockName;
    }

    /** The logical key being locked. */
    public String key() {
        return key;
    }

    /** The kind of lock asked for. */
    public LockKind kind() {
        return kind;
    }

    /**
     * Keeps {@code value} for this acquisition's later events under {@code slot} (compared with {@code equals}; a
     * listener usually passes itself); a null value removes it.
     */
    public synchronized void put(Object slot, @Nullable Object value) {
        Objects.requireNonNull(slot, "slot");
        for (int i = 0; i < attachments.length; i += 2) {
            if (attachments[i].equals(slot)) {
                if (value != null) {
                    attachments[i + 1] = value;
                } else {
                    Object[] fewer = new Object[attachments.length - 2];
                    System.arraycopy(attachments, 0, fewer, 0, i);
                    System.arraycopy(attachments, i + 2, fewer, i, attachments.length - i - 2);
                    attachments = fewer;
                }
                return;
            }
        }
        if (value != null) {
            Object[] more = Arrays.copyOf(attachments, attachments.length + 2);
            more[attachments.length] = slot;
            more[attachments.length + 1] = value;
            attachments = more;
        }
    }

    /** What {@link #put} kept under {@code slot}, or null. */
    public synchronized <T> @Nullable T get(Object slot, Class<T> type) {
        for (int i = 0; i < attachments.length; i += 2) {
            if (attachments[i].equals(slot)) {
                return type.cast(attachments[i + 1]);
            }
        }
        return null;
    }

    @Override
    public String toString() {
        String of = kind == LockKind.EXCLUSIVE ? "" : " (" + kind + ")";
        return "acquisition of lock '" + lockName + "'" + of + " on key '" + key + "'";
    }
}
