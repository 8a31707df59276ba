package dev.dlock.aspect;

import dev.dlock.core.LockHandle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * The locks held for the {@code @DistributedLock} method running on this thread: its fencing token(s), key(s) and
 * whether the lease is still held. Bound while the method body runs on the calling thread; for a method returning a
 * {@code CompletionStage}, {@code Mono} or {@code Flux}, during the synchronous part of the call only (read the token
 * there and pass it on); for a Kotlin suspend function, on every resumption of its coroutine until it completes,
 * whichever thread resumes it. Nested locked methods see their own context; the outer one is restored when they return.
 * Example: docs/annotation.md#inside-the-method-lockcontext.
 */
public final class LockContext {

    private static final ThreadLocal<LockContext> CURRENT = new ThreadLocal<>();

    private final String lockName;
    private final List<LockHandle> handles;
    private final LockContext outer;
    /** Told when the method reads a token, so that its later calls have it issued with the acquisition. */
    private final LockOperation.TokenReads tokenReads;

    private LockContext(String lockName, List<LockHandle> handles, LockContext outer, LockOperation.TokenReads tokenReads) {
        this.lockName = lockName;
        this.handles = handles;
        this.outer = outer;
        this.tokenReads = tokenReads;
    }

    /**
     * The context of the innermost {@code @DistributedLock} method running on this thread.
     *
     * @throws IllegalStateException when no locked method is running on this thread (or its condition was false)
     */
    public static LockContext current() {
        LockContext context = CURRENT.get();
        if (context == null) {
            throw new IllegalStateException("No @DistributedLock method holds a lock on this thread; "
                    + "LockContext.current() is only available inside a locked method body");
        }
        return context;
    }

    /** The context of the innermost locked method running on this thread, if any. */
    public static Optional<LockContext> find() {
        return Optional.ofNullable(CURRENT.get());
    }

    static LockContext enter(String lockName, List<LockHandle> handles, LockOperation.TokenReads tokenReads) {
        LockContext context = new LockContext(lockName, handles, CURRENT.get(), tokenReads);
        CURRENT.set(context);
        return context;
    }

    /**
     * Binds a context for {@code handles} around each resumption of a coroutine: the thread's own context is put back
     * after each, so the threads of the coroutine's dispatcher carry nothing from one coroutine to the next.
     */
    static CoroutineBinding.ThreadBinding resumptions(String lockName, List<LockHandle> handles,
                                                      LockOperation.TokenReads tokenReads) {
        LockContext context = new LockContext(lockName, handles, null, tokenReads);
        return new CoroutineBinding.ThreadBinding() {
            @Override
            public Object enter() {
                LockContext previous = CURRENT.get();
                CURRENT.set(context);
                return previous;
            }

            @Override
            public void exit(Object previous) {
                if (previous == null) {
                    CURRENT.remove();
                } else {
                    CURRENT.set((LockContext) previous);
                }
            }
        };
    }

    void exit() {
        if (outer == null) {
            CURRENT.remove();
        } else {
            CURRENT.set(outer);
        }
    }

    /** The lock's static name. */
    public String lockName() {
        return lockName;
    }

    /** The locked key as passed to the lock manager ({@code <name>:<resolved key>}); the first in sorted order for multi-key locks. */
    public String key() {
        return handles.get(0).key();
    }

    /** Every locked key, in acquisition (sorted) order. */
    public List<String> keys() {
        List<String> keys = new ArrayList<>(handles.size());
        for (LockHandle handle : handles) {
            keys.add(handle.key());
        }
        return Collections.unmodifiableList(keys);
    }

    /**
     * The fencing token of {@link #key()}: larger than every token issued before for that key. The method's later calls
     * have it issued with their acquisition (as {@code @DistributedLock(fencingToken = true)} does from the first).
     */
    public long fencingToken() {
        tokenReads.seen();
        return handles.get(0).fencingToken();
    }

    /** The fencing token of every locked key, in acquisition order. */
    public Map<String, Long> fencingTokens() {
        tokenReads.seen();
        Map<String, Long> tokens = new LinkedHashMap<>();
        for (LockHandle handle : handles) {
            tokens.put(handle.key(), handle.fencingToken());
        }
        return Collections.unmodifiableMap(tokens);
    }

    /**
     * Runs {@code stop} once, on dlock's events thread, when a lease of this call is lost before the method's locks are
     * released — for work an interrupt does not reach: {@code statement::cancel} for a JDBC call (a driver blocked in a
     * socket read on a platform thread ignores interrupts), {@code connection::abort}, a client's own cancel. Disarmed
     * by the release. Works whatever {@code whenLeaseLost} says; see {@link dev.dlock.core.LockHandle#onLeaseLost}.
     */
    public void onLeaseLost(Runnable stop) {
        AtomicBoolean once = new AtomicBoolean();
        for (LockHandle handle : handles) {
            handle.onLeaseLost(() -> {
                if (once.compareAndSet(false, true)) {
                    stop.run();
                }
            });
        }
    }

    /** True while every lease is held (none released, lost, or past its fixed lease). */
    public boolean isHeld() {
        for (LockHandle handle : handles) {
            if (!handle.isHeld()) {
                return false;
            }
        }
        return true;
    }
}
