package dev.dlock.memcached;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.Base64;

/**
 * How a logical key becomes memcached keys: the lock item and the key's owner record, each the prefix, a tag
 * and the key's UTF-8 bytes, sent in base64 so that spaces, braces and any other character are kept. memcached
 * takes at most 250 characters of base64, so a key whose bytes do not fit is replaced by its SHA-256, under a
 * tag of its own (a short key can never be mistaken for a hashed one).
 */
final class MemcachedKeys {

    /** The most raw bytes whose base64 fits memcached's 250-character key. */
    static final int MAX_KEY_BYTES = 186;
    /** The longest allowed prefix: a hashed key (tag, 32 bytes) always fits after it. */
    static final int MAX_PREFIX_BYTES = 64;

    private final byte[] prefix;

    MemcachedKeys(String prefix) {
        this.prefix = prefix.getBytes(StandardCharsets.UTF_8);
        if (this.prefix.length > MAX_PREFIX_BYTES) {
            throw new IllegalArgumentException("keyPrefix must be at most " + MAX_PREFIX_BYTES + " bytes in UTF-8, was "
                    + this.prefix.length);
        }
    }

    /** The memcached key (base64) of {@code key}'s lock item, whose value is its holder's owner token. */
    String lock(String key) {
        return encode('l', key);
    }

    /** The memcached key (base64) of {@code key}'s owner record: the owner of its latest acquisition. */
    String owner(String key) {
        return encode('o', key);
    }

    private String encode(char tag, String key) {
        byte[] raw = key.getBytes(StandardCharsets.UTF_8);
        boolean fits = prefix.length + 2 + raw.length <= MAX_KEY_BYTES;
        byte[] part = fits ? raw : sha256(raw);
        ByteBuffer bytes = ByteBuffer.allocate(prefix.length + 2 + part.length);
        bytes.put(prefix).put((byte) (fits ? tag : Character.toUpperCase(tag))).put((byte) ':').put(part);
        return Base64.getEncoder().encodeToString(bytes.array());
    }

    private static byte[] sha256(byte[] raw) {
        try {
            return MessageDigest.getInstance("SHA-256").digest(raw);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }
}
