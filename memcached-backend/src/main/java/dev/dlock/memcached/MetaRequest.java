package dev.dlock.memcached;

import java.io.ByteArrayOutputStream;
import java.nio.charset.StandardCharsets;

/**
 * One command of memcached's meta protocol, as the bytes that go on the wire. Keys are base64 ({@code b} flag),
 * so a lock key may hold any character; every command answers with exactly one reply, so replies match
 * requests by their order on the connection.
 */
final class MetaRequest {

    private static final byte[] CRLF = {'\r', '\n'};

    private final byte[] bytes;

    private MetaRequest(String line, byte[] data) {
        ByteArrayOutputStream out = new ByteArrayOutputStream(line.length() + 2 + (data == null ? 0 : data.length + 2));
        out.writeBytes(line.getBytes(StandardCharsets.US_ASCII));
        out.writeBytes(CRLF);
        if (data != null) {
            out.writeBytes(data);
            out.writeBytes(CRLF);
        }
        this.bytes = out.toByteArray();
    }

    /** {@code mg}: the item's value, cas and remaining TTL in seconds; a miss answers {@code EN}. */
    static MetaRequest get(String key) {
        return new MetaRequest("mg " + key + " b v c t", null);
    }

    /** {@code ms} in add mode: stores {@code value} only when no live item has the key ({@code HD}), else {@code NS}. */
    static MetaRequest add(String key, byte[] value, long ttlSeconds) {
        return new MetaRequest("ms " + key + " " + value.length + " b T" + ttlSeconds + " ME", value);
    }

    /**
     * {@code ms} with compare-and-swap: replaces the item only while its cas is still {@code cas} ({@code HD});
     * {@code EX} when it changed since, {@code NF} when it is gone.
     */
    static MetaRequest replace(String key, byte[] value, long ttlSeconds, long cas) {
        return new MetaRequest("ms " + key + " " + value.length + " b T" + ttlSeconds + " C" + cas, value);
    }

    /** {@code ms}: stores {@code value} whatever the key held. */
    static MetaRequest set(String key, byte[] value, long ttlSeconds) {
        return new MetaRequest("ms " + key + " " + value.length + " b T" + ttlSeconds, value);
    }

    /** {@code md} with compare-and-swap: deletes the item only while its cas is still {@code cas}. */
    static MetaRequest delete(String key, long cas) {
        return new MetaRequest("md " + key + " b C" + cas, null);
    }

    /** {@code mg} without a value: sets the item's remaining TTL when it exists ({@code HD}), else {@code EN}. */
    static MetaRequest touch(String key, long ttlSeconds) {
        return new MetaRequest("mg " + key + " b T" + ttlSeconds, null);
    }

    /** {@code mn}: does nothing and answers {@code MN}; a round trip. */
    static MetaRequest noop() {
        return new MetaRequest("mn", null);
    }

    /** The command line and its data block, each ended by CRLF. */
    byte[] bytes() {
        return bytes;
    }

    @Override
    public String toString() {
        int end = 0;
        while (end < bytes.length && bytes[end] != '\r') {
            end++;
        }
        return new String(bytes, 0, end, StandardCharsets.US_ASCII);
    }
}
