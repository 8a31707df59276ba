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

    /** Loads {@code dev/dlock/redis/<fileName>} and computes its SHA-1 the way Redis does. */
    static LuaScript load(String fileName) {
        return new LuaScript(fileName, resource(fileName));
    }

    /**
     * Loads {@code fileName} with the functions of {@code preludeName} in front: Redis runs one script
     * text, so functions several scripts share are prepended rather than included.
     */
    static LuaScript load(String preludeName, String fileName) {
        return new LuaScript(fileName, resource(preludeName) + "\n" + resource(fileName));
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
