package dev.dlock.testkit;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * Detects two threads inside one critical section at once: call {@link #enter()} first thing in
 * the section and {@link #exit()} last; {@link #overlaps()} counts every entry that found someone
 * already inside. Also carries a deliberately non-atomic counter that loses updates under overlap.
 * A detector that outlives one test (a bean of a cached Spring context) is {@link #reset()} before each.
 */
public final class OverlapDetector {

    private final AtomicInteger inside = new AtomicInteger();
    private final AtomicInteger overlaps = new AtomicInteger();
    private final AtomicInteger maxInside = new AtomicInteger();
    private int unsafeCounter;

    /** Marks entry into the critical section. */
    public void enter() {
        int now = inside.incrementAndGet();
        if (now > 1) {
            overlaps.incrementAndGet();
        }
        maxInside.accumulateAndGet(now, Math::max);
    }

    /** Marks exit from the critical section. */
    public void exit() {
        inside.decrementAndGet();
    }

    /** Read-modify-write with a yield in between, so that any overlap loses an increment. */
    public void incrementUnsafely() {
        int read = unsafeCounter;
        Thread.yield();
        unsafeCounter = read + 1;
    }

    /**
     * Starts the counts afresh, for a detector shared by several tests: call it before each (for example
     * in {@code @BeforeEach}), when no call is inside.
     *
     * @throws IllegalStateException when a caller is still inside: a call of an earlier test is still running
     */
    public void reset() {
        int stillInside = inside.get();
        if (stillInside != 0) {
            throw new IllegalStateException(stillInside + (stillInside == 1 ? " caller is" : " callers are")
                    + " still inside the critical section: a call of an earlier test is still running");
        }
        overlaps.set(0);
        maxInside.set(0);
        unsafeCounter = 0;
    }

    /** The number of entries that overlapped another holder. */
    public int overlaps() {
        return overlaps.get();
    }

    /** The most holders seen inside at once. */
    public int maxInside() {
        return maxInside.get();
    }

    /** The non-atomic counter's value. */
    public int counter() {
        return unsafeCounter;
    }
}
