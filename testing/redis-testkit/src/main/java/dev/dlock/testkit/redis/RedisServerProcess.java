package dev.dlock.testkit.redis;

import dev.dlock.testkit.LoopbackPorts;
import dev.dlock.testkit.Signals;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.ClientSetInfoConfig;
import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.exceptions.JedisException;

/**
 * A real {@code redis-server} process on a free loopback port, for tests: no persistence, its own
 * temp directory, killed when closed or when the JVM exits.
 */
public final class RedisServerProcess implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(RedisServerProcess.class);

    private static final String HOST = "127.0.0.1";
    /** Generous: a start on a machine whose cores are all busy (a fault suite beside other runs) took over 10 s. */
    private static final Duration STARTUP_TIMEOUT = Duration.ofSeconds(30);
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(10);
    private static final int PORT_ATTEMPTS = 5;
    private static final int ADMIN_TIMEOUT_MILLIS = 5_000;

    private static final Set<String> HOUSEKEEPING_COMMANDS = Set.of("info", "ping", "publish", "replconf", "psync",
            "sync", "cluster", "client", "role", "config", "subscribe", "hello", "command", "sentinel");

    private static final Set<RedisServerProcess> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (RedisServerProcess server : LIVE) {
                server.destroyQuietly();
            }
        }, "dlock-redis-server-reaper"));
    }

    private final Path binary;
    private final Path directory;
    private final Path logFile;
    private final int port;
    private final List<String> extraArguments;
    private final String configText;
    private volatile Process process;
    private volatile boolean closed;
    private volatile boolean suspended;

    private RedisServerProcess(Path binary, Path directory, int port, List<String> extraArguments, String configText) {
        this.binary = binary;
        this.directory = directory;
        this.logFile = directory.resolve("redis-server.log");
        this.port = port;
        this.extraArguments = List.copyOf(extraArguments);
        this.configText = configText;
    }

    /** Starts a server with the binary chosen by {@code dlock.redis.server}, PATH, or embedded-redis. */
    public static RedisServerProcess start() {
        return start(RedisBinaries.resolve());
    }

    /** Whether {@link #start()} runs the embedded Redis 6.2 here (configured so, or no {@code redis-server} on the PATH). */
    public static boolean startsEmbedded() {
        return RedisBinaries.resolvesToEmbedded();
    }

    /** Starts a server from the Redis 6.2 binary inside embedded-redis, whatever is configured. */
    public static RedisServerProcess startEmbedded() {
        return start(RedisBinaries.embedded());
    }

    /** Starts a server from {@code binary} on a free loopback port, retrying when the port is taken meanwhile. */
    public static RedisServerProcess start(Path binary) {
        return start(binary, List.of());
    }

    /** Starts a server with the resolved binary and extra command-line options (for example {@code --replicaof}). */
    public static RedisServerProcess start(List<String> extraArguments) {
        return start(RedisBinaries.resolve(), extraArguments, null);
    }

    /**
     * Starts a Redis Sentinel ({@code redis-server <file> --sentinel}) whose config file holds
     * {@code sentinelConfig}; Sentinel rewrites that file, which is why it cannot be passed as options.
     */
    public static RedisServerProcess startSentinel(String sentinelConfig) {
        return start(RedisBinaries.resolve(), List.of("--sentinel"), sentinelConfig);
    }

    /**
     * Starts a one-node Redis Cluster that owns all 16384 slots, so cluster clients (and their
     * CROSSSLOT checks) can be tested against a single process.
     */
    public static RedisServerProcess startSingleNodeCluster() {
        RedisServerProcess server = start(RedisBinaries.resolve(),
                List.of("--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf"));
        try (Jedis admin = server.admin()) {
            int[] slots = new int[16384];
            for (int slot = 0; slot < slots.length; slot++) {
                slots[slot] = slot;
            }
            admin.clusterAddSlots(slots);
        }
        server.awaitClusterOk();
        return server;
    }

    /** Starts a server from {@code binary} with extra command-line options. */
    public static RedisServerProcess start(Path binary, List<String> extraArguments) {
        return start(binary, extraArguments, null);
    }

    private static RedisServerProcess start(Path binary, List<String> extraArguments, String configText) {
        Path directory;
        try {
            directory = Files.createTempDirectory("dlock-redis-");
        } catch (IOException e) {
            throw new UncheckedIOException("Cannot create a temp directory for redis-server", e);
        }
        IllegalStateException lastFailure = null;
        for (int attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
            RedisServerProcess server = new RedisServerProcess(binary, directory, freePort(), extraArguments, configText);
            LIVE.add(server);
            try {
                server.launch();
                // The version too: embedded-redis names its binary 6.2.6, but the server inside reports 6.2.11.
                log.info("Started {} (Redis {}) on {}", binary, server.version(), server.uri());
                return server;
            } catch (IllegalStateException e) {
                // Another process may have taken the port between probing and binding it.
                lastFailure = e;
                server.destroyQuietly();
                LIVE.remove(server);
                log.warn("redis-server did not start on port {} (attempt {}): {}", server.port, attempt, e.getMessage());
            }
        }
        deleteRecursively(directory);
        throw lastFailure;
    }

    /** Always {@code 127.0.0.1}. */
    public String host() {
        return HOST;
    }

    /** The TCP port the server listens on; stays the same across {@link #restart()}. */
    public int port() {
        return port;
    }

    /** The server's address as {@code redis://127.0.0.1:PORT}. */
    public String uri() {
        return "redis://" + HOST + ":" + port;
    }

    /** The {@code redis-server} binary this process runs. */
    public Path binary() {
        return binary;
    }

    /** The server's version as reported by {@code INFO server}, for example {@code 7.0.15}. */
    public String version() {
        try (Jedis admin = admin()) {
            for (String line : admin.info("server").split("\r?\n")) {
                if (line.startsWith("redis_version:")) {
                    return line.substring("redis_version:".length()).trim();
                }
            }
        }
        throw new IllegalStateException("INFO server of " + uri() + " has no redis_version");
    }

    /** True while the server process is alive. */
    public boolean isRunning() {
        Process current = process;
        return current != null && current.isAlive();
    }

    /** Kills the server with SIGKILL and waits for it to exit, like a crash. */
    public void kill() {
        Process current = process;
        if (current == null) {
            return;
        }
        current.destroyForcibly();
        awaitExit(current);
    }

    /**
     * Freezes the server with SIGSTOP, like a stalled host or a long GC pause: connections stay
     * open and new ones are still accepted by the kernel, but no command runs and no reply is sent
     * until {@link #resume()}. Killing, restarting and closing work on a suspended server.
     */
    public void suspend() {
        signal("STOP");
        suspended = true;
    }

    /** Lets a {@link #suspend() suspended} server run again (SIGCONT); it then runs the commands that queued up. */
    public void resume() {
        signal("CONT");
        suspended = false;
    }

    /**
     * {@link #suspend() Suspends} the server until the returned stall is closed: in a try-with-resources block the
     * server runs again however the block ends, so a failed assertion never leaves a stopped server to the next test.
     */
    public Stall stall() {
        suspend();
        return new Stall();
    }

    /** A {@link #stall()} in progress; closing it resumes the server if it is still suspended. */
    public final class Stall implements AutoCloseable {

        private Stall() {
        }

        /** Resumes the server (SIGCONT) unless it was resumed, killed or restarted meanwhile; idempotent. */
        @Override
        public void close() {
            if (isSuspended()) {
                resume();
            }
        }
    }

    /** True between {@link #suspend()} and {@link #resume()} (or a kill or restart). */
    public boolean isSuspended() {
        return suspended && isRunning();
    }

    /** Stops the server gracefully (SIGTERM), killing it if it does not exit in time. */
    public void stop() {
        Process current = process;
        if (current == null) {
            return;
        }
        if (suspended && current.isAlive()) {
            // A stopped process would only see SIGTERM after the timeout.
            resume();
        }
        current.destroy();
        try {
            if (!current.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                current.destroyForcibly();
                awaitExit(current);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            current.destroyForcibly();
        }
    }

    /** Starts the server again on the same port with an empty dataset; kills it first if it still runs. */
    public void restart() {
        if (closed) {
            throw new IllegalStateException("Redis server on port " + port + " is closed");
        }
        kill();
        launch();
        if (extraArguments.contains("--cluster-enabled")) {
            // nodes.conf in the directory survives, so the node still owns its slots; wait until it says so.
            awaitClusterOk();
        }
        log.info("Restarted {} on {}", binary, uri());
    }

    /**
     * Kills the server and starts it again on the same port and directory without waiting for
     * anything but PING: a cluster node keeps its {@code nodes.conf}, and the caller waits for the
     * whole cluster, since one node alone may never report {@code cluster_state:ok}.
     */
    public void relaunch() {
        if (closed) {
            throw new IllegalStateException("Redis server on port " + port + " is closed");
        }
        kill();
        launch();
        log.info("Relaunched {} on {}", binary, uri());
    }

    /** A new plain admin connection (FLUSHALL, DEL, SCRIPT FLUSH, INFO ...); the caller closes it. */
    public Jedis admin() {
        return new Jedis(HOST, port, adminConfig());
    }

    /** Calls per command from {@code INFO commandstats}, keyed by lowercase command name ({@code "evalsha" -> 12}). */
    public Map<String, Long> commandCalls() {
        String stats;
        try (Jedis admin = admin()) {
            stats = admin.info("commandstats");
        }
        Map<String, Long> calls = new LinkedHashMap<>();
        for (String line : stats.split("\r?\n")) {
            if (!line.startsWith("cmdstat_")) {
                continue;
            }
            int colon = line.indexOf(':');
            String command = line.substring("cmdstat_".length(), colon);
            for (String field : line.substring(colon + 1).split(",")) {
                if (field.startsWith("calls=")) {
                    calls.put(command, Long.parseLong(field.substring("calls=".length())));
                }
            }
        }
        return calls;
    }

    /**
     * The commands run since {@code earlier} (a {@link #commandCalls()} result) and how often, without {@code info}
     * (which reading the stats itself causes) and without the commands that did not run again.
     */
    public Map<String, Long> commandCallsSince(Map<String, Long> earlier) {
        Map<String, Long> since = new LinkedHashMap<>();
        commandCalls().forEach((command, calls) -> {
            long ran = calls - earlier.getOrDefault(command, 0L);
            if (ran > 0 && !command.equals("info")) {
                since.put(command, ran);
            }
        });
        return since;
    }

    /** The sum of all command calls except {@code info} (which reading the stats itself causes). */
    public long totalCommandCalls() {
        return commandCalls().entrySet().stream()
                .filter(entry -> !entry.getKey().equals("info"))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    /**
     * The command calls of clients, without the housekeeping that replicas, sentinels and cluster
     * peers send each other (PING, INFO, PUBLISH of sentinel hellos, REPLCONF, CLUSTER ...).
     */
    public long clientCommandCalls() {
        return commandCalls().entrySet().stream()
                .filter(entry -> !HOUSEKEEPING_COMMANDS.contains(entry.getKey().split("\\|", 2)[0]))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    /** Where the server's stdout and stderr go. */
    public Path logFile() {
        return logFile;
    }

    /** Kills the server and deletes its temp directory. */
    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        kill();
        LIVE.remove(this);
        deleteRecursively(directory);
    }

    @Override
    public String toString() {
        return "RedisServerProcess[" + uri() + ", " + binary + "]";
    }

    private void launch() {
        // A new process is never stopped, whatever the previous one was.
        suspended = false;
        List<String> command = new ArrayList<>(List.of(binary.toString()));
        if (configText != null) {
            Path configFile = directory.resolve("redis-" + port + ".conf");
            try {
                Files.writeString(configFile, configText, StandardCharsets.UTF_8);
            } catch (IOException e) {
                throw new UncheckedIOException("Cannot write " + configFile, e);
            }
            command.add(configFile.toString());
        }
        command.addAll(List.of(
                "--port", Integer.toString(port),
                "--bind", HOST,
                "--save", "",
                "--appendonly", "no",
                "--dir", directory.toString(),
                "--daemonize", "no",
                "--logfile", ""));
        command.addAll(extraArguments);
        ProcessBuilder builder = new ProcessBuilder(command)
                .directory(directory.toFile())
                .redirectErrorStream(true)
                .redirectOutput(ProcessBuilder.Redirect.appendTo(logFile.toFile()));
        try {
            process = builder.start();
        } catch (IOException e) {
            throw new IllegalStateException("Cannot run " + binary + ": " + e.getMessage() + ". "
                    + RedisBinaries.howToInstall(), e);
        }
        awaitPing();
    }

    private void signal(String signal) {
        Process current = process;
        if (current == null || !current.isAlive()) {
            throw new IllegalStateException("Redis server on port " + port + " is not running");
        }
        Signals.send(current.pid(), signal);
    }

    private void awaitPing() {
        long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
        JedisException lastFailure = null;
        while (System.nanoTime() < deadline) {
            if (!process.isAlive()) {
                throw new IllegalStateException("redis-server exited with code " + process.exitValue()
                        + " while starting on port " + port + "; log:\n" + logTail());
            }
            try (Jedis probe = new Jedis(HOST, port, adminConfig())) {
                if ("PONG".equals(probe.ping())) {
                    return;
                }
            } catch (JedisException e) {
                lastFailure = e;
            }
            sleep(Duration.ofMillis(20));
        }
        process.destroyForcibly();
        awaitExit(process);
        throw new IllegalStateException("redis-server did not answer PING on port " + port + " within "
                + STARTUP_TIMEOUT.toSeconds() + " s (last error: " + lastFailure + "); log:\n" + logTail());
    }

    private void awaitClusterOk() {
        long deadline = System.nanoTime() + STARTUP_TIMEOUT.toNanos();
        try (Jedis admin = admin()) {
            while (!admin.clusterInfo().contains("cluster_state:ok")) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("Single-node cluster on port " + port + " did not reach cluster_state:ok");
                }
                sleep(Duration.ofMillis(20));
            }
        }
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(logFile, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e.getMessage() + ")";
        }
    }

    private void destroyQuietly() {
        Process current = process;
        if (current != null) {
            current.destroyForcibly();
        }
    }

    private static JedisClientConfig adminConfig() {
        return DefaultJedisClientConfig.builder()
                .timeoutMillis(ADMIN_TIMEOUT_MILLIS)
                .clientSetInfoConfig(ClientSetInfoConfig.DISABLED)
                .build();
    }

    /**
     * A loopback port nothing listens on right now, below the kernel's ephemeral range ({@link LoopbackPorts}): a
     * server's own port, and where a test points a client that must find no server.
     */
    public static int freePort() {
        return LoopbackPorts.free();
    }

    private static void awaitExit(Process process) {
        try {
            if (!process.waitFor(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("redis-server (pid " + process.pid() + ") did not exit after SIGKILL");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static void sleep(Duration duration) {
        try {
            Thread.sleep(duration.toMillis());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while waiting for redis-server", e);
        }
    }

    private static void deleteRecursively(Path directory) {
        if (!Files.exists(directory)) {
            return;
        }
        try (Stream<Path> paths = Files.walk(directory)) {
            paths.sorted(Comparator.reverseOrder()).forEach(path -> path.toFile().delete());
        } catch (IOException e) {
            log.warn("Cannot delete {}: {}", directory, e.getMessage());
        }
    }
}
