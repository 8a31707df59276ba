package dev.dlock.memcached;

import java.util.Arrays;

/**
 * One reply of the meta protocol: its code ({@code HD}, {@code VA}, {@code EN}, {@code NS}, {@code EX},
 * {@code NF}, {@code MN}), the value of a {@code VA}, and the cas and TTL flags when the command asked for them.
 */
final class MetaReply {

    /** The TTL flag of an item that never expires. */
    static final long NO_EXPIRY = -1;

    private final String code;
    private final byte[] value;
    private final long cas;
    private final long ttlSeconds;

    private MetaReply(String code, byte[] value, long cas, long ttlSeconds) {
        this.code = code;
        this.value = value;
        this.cas = cas;
        this.ttlSeconds = ttlSeconds;
    }

    /**
     * Parses a reply line without its CRLF; {@code value} is the data block of a {@code VA} line, else null.
     *
     * @throws IllegalArgumentException when a flag the reply carries is not a number where one is expected
     */
    static MetaReply parse(String line, byte[] value) {
        String[] tokens = line.split(" ");
        long cas = -1;
        long ttl = Long.MIN_VALUE;
        for (int i = "VA".equals(tokens[0]) ? 2 : 1; i < tokens.length; i++) {
            String token = tokens[i];
            if (token.length() > 1 && token.charAt(0) == 'c') {
                cas = Long.parseLong(token.substring(1));
            } else if (token.length() > 1 && token.charAt(0) == 't') {
                ttl = Long.parseLong(token.substring(1));
            }
        }
        return new MetaReply(tokens[0], value, cas, ttl);
    }

    /** True for an item that was found ({@code VA} or {@code HD} of a get or touch). */
    boolean hit() {
        return "VA".equals(code) || "HD".equals(code);
    }

    /** True for a store or delete that was done ({@code HD}). */
    boolean done() {
        return "HD".equals(code);
    }

    /** The reply's code. */
    String code() {
        return code;
    }

    /** True when this {@code VA}'s value is exactly {@code expected}. */
    boolean valueIs(byte[] expected) {
        return value != null && Arrays.equals(value, expected);
    }

    /** The value of a {@code VA} reply, null for any other. */
    byte[] value() {
        return value;
    }

    /** The item's cas, or -1 when the reply has none. */
    long cas() {
        return cas;
    }

    /** The item's remaining TTL in memcached's whole seconds, {@link #NO_EXPIRY}, or {@link Long#MIN_VALUE} when absent. */
    long ttlSeconds() {
        return ttlSeconds;
    }

    @Override
    public String toString() {
        return code + (cas >= 0 ? " c" + cas : "") + (ttlSeconds != Long.MIN_VALUE ? " t" + ttlSeconds : "");
    }
}
