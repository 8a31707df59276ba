package dev.dlock.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.List;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/** One Lua script loaded from the classpath, run by its SHA-1 and re-sent in full when the server lost it. */
final class LuaScript {

    private final String name;
    private final String source;
    private final String sha1;

    private LuaScript(String name, String source) {
        this.name = name;
        this.source = source;
        this.sha1 = sha1Hex(source);
    }

    /**
     * Loads {@code dev/dlock/redis/<fileName>} with the functions of the {@code preludes} in front, in that
     * order, and computes the SHA-1 of the whole the way Redis does: Redis runs one script text, so a rule
     * several scripts share lives in one prelude file and is prepended rather than included. Only the
     * library's own files are joined; keys and values always travel as KEYS and ARGV.
     */
    static LuaScript load(String fileName, String... preludes) {
        StringBuilder source = new StringBuilder();
        for (String prelude : preludes) {
            source.append(resource(prelude)).append('\n');
        }
        return new LuaScript(fileName, source.append(resource(fileName)).toString());
    }

    private static String resource(String fileName) {
        String resource = "/dev/dlock/redis/" + fileName;
        try (InputStream in = LuaScript.class.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("Lua script " + resource + " is missing from the classpath");
            }
            return new String(in.readAllBytes(), StandardCharsets.UTF_8);
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot read Lua script " + resource, e);
        }
    }

    /**
     * Runs the script with EVALSHA; when the server does not know it (restart, SCRIPT FLUSH, a new
     * cluster node) runs it with EVAL, which also caches it for the next EVALSHA.
     */
    Object run(UnifiedJedis client, List<String> keys, List<String> args) {
        try {
            return client.evalsha(sha1, keys, args);
        } catch (JedisNoScriptException e) {
            return client.eval(source, keys, args);
        }
    }

    /** The file name, for messages. */
    String name() {
        return name;
    }

    /** The script's SHA-1 in lowercase hex. */
    String sha1() {
        return sha1;
    }

    /** The script text. */
    String source() {
        return source;
    }

    private static String sha1Hex(String text) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-1");
            return HexFormat.of().formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-1 is not available in this JVM", e);
        }
    }
}
