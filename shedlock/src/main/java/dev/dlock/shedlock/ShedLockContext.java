package dev.dlock.shedlock;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockState;

import java.util.Optional;

/**
 * The ShedLock lock that dlock's provider took for the task running on this thread: its fencing token, key and whether
 * its lease still holds; the counterpart of {@code LockContext} for {@code @SchedulerLock} methods, with no Spring
 * dependency. Bound from the provider's {@code lock} until its {@code unlock}, on the locking thread (ShedLock runs the
 * task there); nested locks see their own (the outer one is back when they end); a lock unlocked from another thread
 * stops being seen here at once. Example: docs/migration/shedlock.md.
 */
public final class ShedLockContext {

    private static final ThreadLocal<ShedLockContext> CURRENT = new ThreadLocal<>();

    private final String name;
    private final LockHandle handle;
    private final ShedLockContext outer;
    private volatile boolean ended;

    private ShedLockContext(String name, LockHandle handle, ShedLockContext outer) {
        this.name = name;
        this.handle = handle;
        this.outer = outer;
    }

    /**
     * The innermost lock dlock's ShedLock provider holds for this thread.
     *
     * @throws IllegalStateException when none is held on this thread
     */
    public static ShedLockContext current() {
        return find().orElseThrow(() -> new IllegalStateException("No ShedLock lock taken by dlock's provider is held on "
                + "this thread; ShedLockContext.current() is only available while a @SchedulerLock task runs"));
    }

    /** The innermost lock dlock's ShedLock provider holds for this thread, if any. */
    public static Optional<ShedLockContext> find() {
        ShedLockContext context = CURRENT.get();
        ShedLockContext live = live(context);
        if (live != context) {
            bind(live);
        }
        return Optional.ofNullable(live);
    }

    /** Binds a lock just taken to the calling thread (the one ShedLock runs the task on). */
    static ShedLockContext enter(String name, LockHandle handle) {
        ShedLockContext context = new ShedLockContext(name, handle, live(CURRENT.get()));
        CURRENT.set(context);
        return context;
    }

    /** The lock was unlocked: it is no longer seen, whichever thread unlocked it. */
    void end() {
        ended = true;
        if (CURRENT.get() == this) {
            bind(live(outer));
        }
    }

    /** {@code context} or the nearest outer one still held; null when none. */
    private static ShedLockContext live(ShedLockContext context) {
        while (context != null && context.ended) {
            context = context.outer;
        }
        return context;
    }

    private static void bind(ShedLockContext context) {
        if (context == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(context);
        }
    }

    /** ShedLock's name of the lock ({@code @SchedulerLock(name = ...)}). */
    public String name() {
        return name;
    }

    /** The dlock key the lock is held under: {@code <dlock lock name>:<ShedLock name>}. */
    public String key() {
        return handle.key();
    }

    /**
     * A number larger than every fencing token issued before for this lock, in any JVM; pass it to the resources the
     * task writes.
     *
     * @throws UnsupportedOperationException when the store issues no fencing tokens (memcached)
     * @see LockHandle#fencingToken()
     */
    public long fencingToken() {
        return handle.fencingToken();
    }

    /** True while the store cannot have let the lock go: not past {@code lockAtMostFor}, not lost. */
    public boolean isHeld() {
        return handle.isHeld();
    }

    /** The lease's state; past {@code lockAtMostFor} it reads {@link LockState#LOST}. */
    public LockState state() {
        return handle.state();
    }

    @Override
    public String toString() {
        return "ShedLockContext[" + name + ", " + handle + "]";
    }
}
