package dev.dlock.core.spi;

/**
 * The clock floor fencing tokens start at: the store's clock in microseconds since the epoch. A store that issues
 * every token at or above the clock of its start lets a guard that accepted its tokens keep accepting the next store's
 * tokens after the lock store is changed; which stores do is in docs/fencing.md.
 */
public final class FencingTokens {

    /**
     * The least token on the clock floor's scale: 10<sup>15</sup> µs after the epoch (2001-09-09). A token below it was
     * counted from a small start (a transaction id, a sequence that started at 1), not taken from a clock.
     */
    public static final long CLOCK_SCALE = 1_000_000_000_000_000L;

    private FencingTokens() {
    }

    /** This JVM's clock in microseconds since the epoch: the floor of a store that keeps its tokens in this JVM. */
    public static long clockFloorMicros() {
        return Math.multiplyExact(System.currentTimeMillis(), 1_000L);
    }

    /** Whether {@code token} is on the clock floor's scale (see {@link #CLOCK_SCALE}). */
    public static boolean onClockScale(long token) {
        return token >= CLOCK_SCALE;
    }
}
