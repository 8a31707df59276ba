package dev.dlock.redis;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/** One Lua script loaded from the classpath, run by its SHA-1 and re-sent in full when the server lost it. */
final class LuaScript {

    /** Every distinct script loaded in this JVM, by SHA-1, in load order: the scripts {@link Batch} can run. Guarded by the class. */
    private static final Map<String, LuaScript> LOADED = new LinkedHashMap<>();
    /** How many scripts {@link #LOADED} holds; read without the lock. */
    private static volatile int loadedCount;
    /** The batch script over the scripts loaded when it was built; null before the first batch. */
    private static volatile Batch batch;

    private final String name;
    /** The preludes in front of {@link #body}, joined. */
    private final String preludes;
    private final String body;
    private final String source;
    private final String sha1;

    private LuaScript(String name, String preludes, String body) {
        this.name = name;
        this.preludes = preludes;
        this.body = body;
        this.source = preludes + body;
        this.sha1 = sha1Hex(source);
    }

    /**
     * Loads {@code dev/dlock/redis/<fileName>} with the functions of the {@code preludes} in front, in that
     * order, and computes the SHA-1 of the whole the way Redis does: Redis runs one script text, so a rule
     * several scripts share lives in one prelude file and is prepended rather than included. Only the
     * library's own files are joined; keys and values always travel as KEYS and ARGV.
     */
    static LuaScript load(String fileName, String... preludes) {
        StringBuilder text = new StringBuilder();
        for (String prelude : preludes) {
            text.append(resource(prelude)).append('\n');
        }
        LuaScript script = new LuaScript(fileName, text.toString(), resource(fileName));
        synchronized (LuaScript.class) {
            // One entry per text: a script loaded twice (by two classes, or by tests) is one script of the batch.
            LuaScript loaded = LOADED.computeIfAbsent(script.sha1, sha -> script);
            loadedCount = LOADED.size();
            return loaded;
        }
    }

    /** The batch script over every script loaded so far: built on first use, and again after a class loaded scripts of its own. */
    static Batch batch() {
        Batch current = batch;
        if (current != null && current.covered == loadedCount) {
            return current;
        }
        synchronized (LuaScript.class) {
            if (batch == null || batch.covered != LOADED.size()) {
                batch = new Batch(List.copyOf(LOADED.values()));
            }
            return batch;
        }
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

    /**
     * One script that runs the scripts of several callers in one call ({@code EVALSHA}), so that Redis enters Lua
     * and parses a command once per batch rather than once per caller. It is generated from the library's scripts,
     * never written by hand: each script becomes a function of its own {@code KEYS} and {@code ARGV}, built on its
     * first use in a call after its own preludes (each function sees exactly what the script alone sees), and is run
     * under {@code pcall}, so a script that fails (a key of the wrong type, an {@code error_reply}) answers its own
     * caller with its error and the others with their replies. The batch declares every key it touches: its
     * {@code KEYS} are the calls' keys in order, its {@code ARGV} a header and then the calls' arguments in order.
     * The header has three bytes per call: the script's number, its key count and its argument count, so a call
     * costs Redis no argument of its own beyond the script's (each argument costs about as much to parse as the
     * Lua entry the batch saves). The reply has one entry per call: the script's reply ({@code nil} answered as
     * {@code false}, which is what a lone script's {@code nil} reads as), or its error.
     */
    static final class Batch {

        /** The largest script number, key count and argument count a header byte holds (one UTF-8 byte per field). */
        static final int MAX_FIELD = 127;

        /** The dispatch loop after the scripts' builders; no call has more than {@link #MAX_FIELD} keys or arguments to unpack. */
        private static final String DISPATCH = """
                local unpack, byte = unpack, string.byte
                local header = ARGV[1]
                local built, replies = {}, {}
                local k, a = 0, 2
                for c = 1, #header, 3 do
                  local n, keyCount, argCount = byte(header, c, c + 2)
                  local keys, args = {unpack(KEYS, k + 1, k + keyCount)}, {unpack(ARGV, a, a + argCount - 1)}
                  k, a = k + keyCount, a + argCount
                  local script = built[n]
                  if not script then
                    script = build(n)
                    built[n] = script
                  end
                  local ok, reply = pcall(script, keys, args)
                  if not ok then
                    if type(reply) == 'table' and type(reply.err) == 'string' then
                      reply = redis.error_reply(reply.err)
                    else
                      -- A Redis error ('WRONGTYPE ...') keeps its code; a Lua error gets the code a lone script's would.
                      reply = tostring(reply)
                      reply = redis.error_reply(string.find(reply, '^%u+ ') and reply or 'ERR ' .. reply)
                    end
                  elseif reply == nil then
                    reply = false
                  end
                  replies[#replies + 1] = reply
                end
                return replies
                """;

        private final Map<LuaScript, Integer> numbers = new IdentityHashMap<>();
        /** How many loaded scripts it was built over. */
        private final int covered;
        private final String source;
        private final String sha1;

        private Batch(List<LuaScript> scripts) {
            covered = scripts.size();
            StringBuilder lua = new StringBuilder("-- dlock: several callers' scripts in one call (LuaScript.Batch)\n"
                    + "local function build(n)\n");
            for (LuaScript script : scripts) {
                if (script.source.startsWith("#!") || numbers.size() == MAX_FIELD) {
                    // Flags apply to a whole call, and a header byte numbers so many scripts: the rest run alone.
                    continue;
                }
                int number = numbers.size() + 1;
                numbers.put(script, number);
                lua.append("if n == ").append(number).append(" then -- ").append(script.name).append('\n')
                        .append(script.preludes)
                        .append("return function(KEYS, ARGV)\n").append(script.body).append("\nend\nend\n");
            }
            source = lua.append("end\n").append(DISPATCH).toString();
            sha1 = sha1Hex(source);
        }

        /** True when a call of {@code script} with these keys and arguments can run in this batch script. */
        boolean takes(LuaScript script, List<String> keys, List<String> args) {
            return numbers.containsKey(script) && keys.size() <= MAX_FIELD && args.size() <= MAX_FIELD;
        }

        /** An empty list of calls of this batch script. */
        Calls calls() {
            return new Calls();
        }

        /** The generated text. */
        String source() {
            return source;
        }

        /** Its SHA-1 in lowercase hex. */
        String sha1() {
            return sha1;
        }

        /** The keys and arguments of one call of the batch script, added call by call. */
        final class Calls {
            private final StringBuilder header = new StringBuilder();
            private final List<String> keys = new ArrayList<>();
            private final List<String> args = new ArrayList<>();

            private Calls() {
                args.add("");
            }

            /** Adds a call of {@code script}, which this batch script {@link #takes}. */
            void add(LuaScript script, List<String> scriptKeys, List<String> scriptArgs) {
                header.append((char) numbers.get(script).intValue()).append((char) scriptKeys.size()).append((char) scriptArgs.size());
                keys.addAll(scriptKeys);
                args.addAll(scriptArgs);
            }

            /** Every call's keys, in order. */
            List<String> keys() {
                return keys;
            }

            /** The header, then every call's arguments in order. */
            List<String> args() {
                args.set(0, header.toString());
                return args;
            }
        }
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
