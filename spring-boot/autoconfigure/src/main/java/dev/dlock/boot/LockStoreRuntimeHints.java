package dev.dlock.boot;

import org.springframework.aot.hint.ExecutableMode;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.util.ClassUtils;

import java.util.List;

/**
 * What the lock stores read at run time that a native image leaves out unless told: the Redis store's Lua scripts, the
 * JDBC store's schema files, the few methods they and the engine reach by reflection. Here, not in the store modules,
 * because those depend on dlock-core only (no Spring, so no registrar API), and this module already knows each store;
 * each store's hints are registered only when its module is on the class path. Listed in
 * {@code META-INF/spring/aot.factories}.
 */
public class LockStoreRuntimeHints implements RuntimeHintsRegistrar {

    /** Where the Redis store's scripts are (read by {@code LuaScript} with {@code getResourceAsStream}). */
    static final String LUA_SCRIPTS = "dev/dlock/redis/*.lua";
    /** Where the JDBC store's schema files are, one per dialect (read by {@code LockSchema}). */
    static final String SCHEMA_FILES = "dev/dlock/jdbc/schema-*.sql";

    /** Registers the hints of the stores present. */
    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        if (ClassUtils.isPresent("dev.dlock.redis.RedisLockBackend", classLoader)) {
            hints.resources().registerPattern(LUA_SCRIPTS);
            // JedisGeneration binds these through method handles, so that one jar serves Jedis 6 and 7.
            hints.reflection().registerType(TypeReference.of("redis.clients.jedis.params.SetParams"),
                    type -> type.withMethod("px", List.of(TypeReference.of(long.class)), ExecutableMode.INVOKE));
            hints.reflection().registerType(TypeReference.of("redis.clients.jedis.UnifiedJedis"),
                    type -> type.withMethod("pipelined", List.of(), ExecutableMode.INVOKE));
            hints.reflection().registerTypeIfPresent(classLoader, "redis.clients.jedis.RedisClusterClient", type -> { });
        }
        if (ClassUtils.isPresent("dev.dlock.jdbc.JdbcLockBackend", classLoader)) {
            hints.resources().registerPattern(SCHEMA_FILES);
        }
        // The engine compiles for Java 17 and reaches virtual threads (spring.threads.virtual.enabled) by reflection.
        hints.reflection().registerType(Thread.class, type -> type.withMethod("ofVirtual", List.of(), ExecutableMode.INVOKE));
        hints.reflection().registerTypeIfPresent(classLoader, "java.lang.Thread$Builder", type -> type
                .withMethod("name", List.of(TypeReference.of(String.class), TypeReference.of(long.class)), ExecutableMode.INVOKE)
                .withMethod("factory", List.of(), ExecutableMode.INVOKE));
    }
}
