package dev.dlock.redis;

import org.jspecify.annotations.Nullable;
import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.RedisClusterClient;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

import java.io.IOException;
import java.io.InputStream;
import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.net.URL;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.jar.Manifest;

/**
 * The few places where Jedis 6, 7 and 8 differ for dlock, behind one adapter, so that the store
 * compiled against Jedis 7 runs on any of them: Jedis 7 added {@code RedisClusterClient} (only touched
 * when that class exists), and changed the declared return type of {@code UnifiedJedis.pipelined()}
 * ({@code PipelineBase} in 6, {@code AbstractPipeline} in 7; a direct call would link to one of them only), and
 * the declared return type of {@code SetParams.px} ({@code BaseSetExParams} in 6, {@code SetParams} in 7).
 * Jedis 8 removed {@code JedisPooled}, {@code JedisSentineled} and {@code UnifiedJedis}'s public
 * constructors, none of which the store touches, and negotiates RESP3 by default; what the store links
 * to is as in 7 (the contract suite runs on 8.0.2 in integration-tests/jedis8).
 * Older Jedis versions are refused by {@link #requireSupported()} with the versions named.
 */
public final class JedisGeneration {

    /** The oldest Jedis major version dlock-redis runs on. */
    public static final int MINIMUM_MAJOR_VERSION = 6;

    private static final String REDIS_CLUSTER_CLIENT = "redis.clients.jedis.RedisClusterClient";
    private static final boolean HAS_REDIS_CLUSTER_CLIENT = isPresent(REDIS_CLUSTER_CLIENT);
    /** UnifiedJedis.pipelined(), whichever its declared return type; null when absent or not an AbstractPipeline. */
    private static final MethodHandle PIPELINED = pipelinedHandle();
    private static final AtomicInteger MANIFEST_READS = new AtomicInteger();
    /** Read once: the manifest is a jar entry, and reading it showed as 16 % of the client's CPU when read per batch. */
    private static final String VERSION = readVersion();
    /** SetParams.px(long) on a SetParams, its result dropped (the params are a builder that returns itself). */
    private static final MethodHandle SET_PX = setPxHandle();

    private JedisGeneration() {
    }

    /**
     * Fails with the versions named when the Jedis on the class path is older than dlock-redis
     * supports; called by the stores' builders, so an old Jedis stops the start, not the first lock.
     */
    public static void requireSupported() {
        String version = version();
        int major = majorVersion(version);
        if (PIPELINED == null || (major > 0 && major < MINIMUM_MAJOR_VERSION)) {
            throw new IllegalStateException("dlock-redis needs Jedis " + MINIMUM_MAJOR_VERSION
                    + ".0 or later (tested with 6.0.0, 7.4.1 and 8.0.2), but the class path has Jedis "
                    + (version == null ? "of an unknown version" : version)
                    + "; upgrade redis.clients:jedis (Spring Boot 3.5 manages 6.0.0, Spring Boot 4.1 manages 7.4.x; dlock-redis also runs on Jedis 8)");
        }
    }

    /** The Jedis version from its jar's manifest ({@code Bundle-Version}), or null when it cannot be read. */
    public static @Nullable String version() {
        return VERSION;
    }

    /** How many times the Jedis jar's manifest was read: once per class loader (tests check the hot path reads none). */
    static int manifestReads() {
        return MANIFEST_READS.get();
    }

    private static String readVersion() {
        MANIFEST_READS.incrementAndGet();
        URL classFile = UnifiedJedis.class.getResource("UnifiedJedis.class");
        if (classFile == null || !"jar".equals(classFile.getProtocol())) {
            return null;
        }
        String jar = classFile.toString();
        try (InputStream in = new URL(jar.substring(0, jar.indexOf("!/") + 2) + "META-INF/MANIFEST.MF").openStream()) {
            return new Manifest(in).getMainAttributes().getValue("Bundle-Version");
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    /** True for a cluster client: a {@code JedisCluster}, or a Jedis 7 {@code RedisClusterClient}. */
    @SuppressWarnings("deprecation")
    static boolean isClusterClient(UnifiedJedis client) {
        return client instanceof JedisCluster || HAS_REDIS_CLUSTER_CLIENT && Jedis7.isClusterClient(client);
    }

    /** The connection pool of every node a cluster client knows, by "host:port". */
    @SuppressWarnings("deprecation")
    static Map<String, ConnectionPool> clusterNodes(UnifiedJedis client) {
        if (client instanceof JedisCluster cluster) {
            return cluster.getClusterNodes();
        }
        return Jedis7.clusterNodes(client);
    }

    /** A connection to the master serving {@code slot}, from a cluster client's pools; the caller closes it. */
    @SuppressWarnings("deprecation")
    static Connection connectionFromSlot(UnifiedJedis client, int slot) {
        if (client instanceof JedisCluster cluster) {
            return cluster.getConnectionFromSlot(slot);
        }
        return Jedis7.connectionFromSlot(client, slot);
    }

    /** {@code client.pipelined()}, linked by name so it runs on Jedis 6 and 7 alike. */
    static AbstractPipeline pipelined(UnifiedJedis client) {
        if (PIPELINED == null) {
            // Reached only past a builder's check (which fails first); never a manifest read per batch.
            requireSupported();
        }
        try {
            return (AbstractPipeline) PIPELINED.invokeExact(client);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("UnifiedJedis.pipelined() failed", e);
        }
    }

    /** The major version in a Jedis version string ({@code "8.0.2"}: 8); 0 when it cannot be read. */
    public static int majorVersion(@Nullable String version) {
        if (version == null) {
            return 0;
        }
        int dot = version.indexOf('.');
        try {
            return Integer.parseInt(dot < 0 ? version : version.substring(0, dot));
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /** The parameters of {@code SET key value NX PX leaseMillis}, linked on Jedis 6 and 7 alike. */
    static SetParams setIfAbsent(long leaseMillis) {
        SetParams params = SetParams.setParams().nx();
        try {
            SET_PX.invokeExact(params, leaseMillis);
        } catch (RuntimeException | Error e) {
            throw e;
        } catch (Throwable e) {
            throw new IllegalStateException("SetParams.px failed", e);
        }
        return params;
    }

    private static MethodHandle setPxHandle() {
        // Looked up on SetParams by px's return type on this Jedis: Jedis 6 inherits px from a package-private class.
        try {
            Class<?> returned = SetParams.class.getMethod("px", long.class).getReturnType();
            return MethodHandles.publicLookup().findVirtual(SetParams.class, "px", MethodType.methodType(returned, long.class))
                    .asType(MethodType.methodType(void.class, SetParams.class, long.class));
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("Jedis's SetParams.px(long) cannot be called; dlock-redis needs Jedis "
                    + MINIMUM_MAJOR_VERSION + " or later", e);
        }
    }

    private static MethodHandle pipelinedHandle() {
        try {
            MethodHandle handle = MethodHandles.publicLookup().unreflect(UnifiedJedis.class.getMethod("pipelined"));
            if (!AbstractPipeline.class.isAssignableFrom(handle.type().returnType())) {
                return null;
            }
            return handle.asType(MethodType.methodType(AbstractPipeline.class, UnifiedJedis.class));
        } catch (ReflectiveOperationException | LinkageError e) {
            return null;
        }
    }

    private static boolean isPresent(String className) {
        try {
            Class.forName(className, false, UnifiedJedis.class.getClassLoader());
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        }
    }

    /** Touches Jedis 7's {@code RedisClusterClient}; this class is loaded only when that class exists. */
    private static final class Jedis7 {

        static boolean isClusterClient(UnifiedJedis client) {
            return client instanceof RedisClusterClient;
        }

        static Map<String, ConnectionPool> clusterNodes(UnifiedJedis client) {
            return ((RedisClusterClient) client).getClusterNodes();
        }

        static Connection connectionFromSlot(UnifiedJedis client, int slot) {
            return ((RedisClusterClient) client).getConnectionFromSlot(slot);
        }
    }
}
