package dev.dlock.memcached;

import dev.dlock.testkit.LoopbackPorts;
import dev.dlock.testkit.Signals;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Assumptions;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * A real {@code memcached} process for tests, on a free loopback port ({@code -l 127.0.0.1 -p <port> -U 0}),
 * killed when closed or when the JVM exits. The binary is {@code -Ddlock.memcached.bin=...} or
 * {@code memcached} on the PATH; without one (or with one older than 1.6, which lacks the meta protocol) the
 * calling tests are skipped with a message that says how to install it. Never touches a server it did not start.
 */
public final class MemcachedServer implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(MemcachedServer.class);

    /** The system property naming the memcached binary. */
    public static final String BINARY_PROPERTY = "dlock.memcached.bin";
    /** memcached's own default port: never used here, it may be the machine's server. */
    private static final int SYSTEM_PORT = 11211;
    private static final int STARTUP_SECONDS = 30;
    private static final int PORT_ATTEMPTS = 5;
    private static final Pattern VERSION = Pattern.compile("memcached (\\d+)\\.(\\d+)\\.(\\d+)");
    private static final Set<MemcachedServer> LIVE = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> LIVE.forEach(MemcachedServer::kill), "dlock-memcached-reaper"));
    }

    private final Path binary;
    private final String version;
    private final int port;
    private final List<String> options;
    private volatile Process process;

    private MemcachedServer(Path binary, String version, int port, List<String> options) {
        this.binary = binary;
        this.version = version;
        this.port = port;
        this.options = List.copyOf(options);
    }

    /** Starts a server with 64 MB of memory; skips the calling test when memcached 1.6+ is not installed. */
    public static MemcachedServer start() {
        return start(64);
    }

    /** Starts a server with {@code megabytes} of item memory ({@code -m}; 2 is the least memcached takes). */
    public static MemcachedServer start(int megabytes) {
        Path binary = binary();
        String version = versionOf(binary);
        IllegalStateException failure = null;
        for (int attempt = 1; attempt <= PORT_ATTEMPTS; attempt++) {
            MemcachedServer server = new MemcachedServer(binary, version, freePort(), List.of("-m", Integer.toString(megabytes)));
            try {
                server.launch();
                log.info("Started {} (memcached {}) on {}", binary, version, server.address());
                return server;
            } catch (IllegalStateException e) {
                // Another process may have taken the port between probing and binding it.
                failure = e;
                server.kill();
            }
        }
        throw failure;
    }

    /** {@code 127.0.0.1:<port>}, as the backend's builder takes it. */
    public String address() {
        return "127.0.0.1:" + port;
    }

    /** The server's version, as {@code memcached -V} prints it (for example 1.6.18). */
    public String version() {
        return version;
    }

    /** The server's process id, for signals. */
    public long pid() {
        return process.pid();
    }

    /** Kills the server with SIGKILL, like a crash, and waits until it is gone. */
    public void kill() {
        LIVE.remove(this);
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

    /** Starts the server again on the same port, empty: memcached keeps nothing across a restart. */
    public void restart() {
        kill();
        launch();
    }

    /** Stops the process with SIGSTOP: it keeps its connections but answers nothing until {@link #resume()}. */
    public void pause() {
        signal("STOP");
    }

    /** Lets a paused process run again (SIGCONT). */
    public void resume() {
        signal("CONT");
    }

    /** Deletes the memcached item {@code base64Key} behind its holder's back; true when it existed. */
    public boolean delete(String base64Key) {
        try (AdminConnection admin = new AdminConnection(port)) {
            return admin.exchange(List.of("md " + base64Key + " b"), 1).get(0).equals("HD");
        }
    }

    /** Whether the item {@code base64Key} exists, asked without bumping it in the LRU ({@code mg … u}). */
    public boolean has(String base64Key) {
        try (AdminConnection admin = new AdminConnection(port)) {
            return admin.exchange(List.of("mg " + base64Key + " b u"), 1).get(0).startsWith("HD");
        }
    }

    /** Whether the lock item of logical {@code key} under {@code keyPrefix} exists, asked without bumping it. */
    public boolean holdsLockItem(String keyPrefix, String key) {
        return has(new MemcachedKeys(keyPrefix).lock(key));
    }

    /** Deletes every item ({@code flush_all}). */
    public void flushAll() {
        try (AdminConnection admin = new AdminConnection(port)) {
            String reply = admin.exchange(List.of("flush_all"), 1).get(0);
            if (!reply.equals("OK")) {
                throw new IllegalStateException("flush_all answered " + reply);
            }
        }
    }

    /**
     * Stores {@code count} items shaped like {@code base64Key}'s (its key length and value size, so they fall in
     * its slab class, where memcached evicts), never expiring: the memory pressure of a busy cache. Their keys are
     * {@code f} and a number from {@code first}, zero-padded; quiet sets ({@code q}) in batches, each ended by
     * {@code mn}. The item itself is looked at without bumping it in the LRU.
     */
    public void fillBeside(String base64Key, int first, int count) {
        int keyLength = Base64.getDecoder().decode(base64Key).length;
        try (AdminConnection admin = new AdminConnection(port)) {
            String reply = admin.exchange(List.of("mg " + base64Key + " b s u"), 1).get(0);
            if (!reply.startsWith("HD s")) {
                throw new IllegalStateException("no item to fill beside: mg answered " + reply);
            }
            int valueBytes = Integer.parseInt(reply.substring(4).split(" ")[0]);
            String value = "v".repeat(valueBytes);
            for (int start = first; start < first + count; start += 500) {
                List<String> lines = new ArrayList<>();
                for (int n = start; n < Math.min(first + count, start + 500); n++) {
                    String number = Integer.toString(n);
                    lines.add("ms f" + "0".repeat(Math.max(0, keyLength - 1 - number.length())) + number + " " + valueBytes + " T0 q");
                    lines.add(value);
                }
                lines.add("mn");
                admin.exchange(lines, 0);
                List<String> errors = admin.readUntil("MN");
                if (!errors.isEmpty()) {
                    throw new IllegalStateException("memcached refused filler items: " + errors.get(0));
                }
            }
        }
    }

    /**
     * Runs {@code stats} and returns one counter; for example {@code evictions}, {@code cmd_get}.
     *
     * @throws IllegalStateException when the server does not report it
     */
    public long stat(String name) {
        try (AdminConnection admin = new AdminConnection(port)) {
            admin.exchange(List.of("stats"), 0);
            for (String line : admin.readUntil("END")) {
                String[] parts = line.split(" ");
                if (parts.length == 3 && parts[1].equals(name)) {
                    return Long.parseLong(parts[2]);
                }
            }
        }
        throw new IllegalStateException("memcached " + address() + " reports no stat " + name);
    }

    @Override
    public void close() {
        kill();
    }

    private void launch() {
        List<String> command = new ArrayList<>(List.of(binary.toString(), "-l", "127.0.0.1", "-p", Integer.toString(port), "-U", "0"));
        command.addAll(options);
        if ("root".equals(System.getProperty("user.name"))) {
            command.addAll(List.of("-u", "root")); // memcached refuses to run as root without naming the user
        }
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(ProcessBuilder.Redirect.DISCARD).start();
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start " + command, e);
        }
        LIVE.add(this);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(STARTUP_SECONDS);
        while (true) {
            try (AdminConnection admin = new AdminConnection(port)) {
                if (admin.exchange(List.of("mn"), 1).equals(List.of("MN"))) {
                    return;
                }
            } catch (UncheckedIOException e) {
                if (!process.isAlive()) {
                    throw new IllegalStateException("memcached exited with " + process.exitValue() + ": " + command, e);
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("memcached did not answer on port " + port + " within " + STARTUP_SECONDS + " s", e);
                }
            }
            try {
                Thread.sleep(20);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while starting memcached", e);
            }
        }
    }

    private void signal(String signal) {
        Signals.send(pid(), signal);
    }

    /** The binary to run; skips the calling test when there is none. */
    private static Path binary() {
        String configured = System.getProperty(BINARY_PROPERTY);
        Optional<Path> found = configured != null && !configured.isBlank() ? Optional.of(Path.of(configured)).filter(Files::isExecutable)
                : Stream.concat(Stream.of(System.getenv().getOrDefault("PATH", "").split(":")), Stream.of("/usr/bin", "/usr/local/bin"))
                        .filter(dir -> !dir.isEmpty())
                        .map(dir -> Path.of(dir, "memcached"))
                        .filter(Files::isExecutable)
                        .findFirst();
        Assumptions.assumeTrue(found.isPresent(), configured != null
                ? "-D" + BINARY_PROPERTY + "=" + configured + " is not an executable file; the memcached tests are skipped"
                : "memcached is not installed, so the memcached tests are skipped: install memcached 1.6 or later (Debian and "
                        + "Ubuntu: apt-get install memcached; macOS: brew install memcached) or pass -D" + BINARY_PROPERTY
                        + "=/path/to/memcached");
        return found.get();
    }

    /** The binary's version; skips the calling test when it is older than 1.6. */
    private static String versionOf(Path binary) {
        String output;
        try {
            Process process = new ProcessBuilder(binary.toString(), "-V").redirectErrorStream(true).start();
            output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            process.waitFor(10, TimeUnit.SECONDS);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot run " + binary + " -V", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
        Matcher matcher = VERSION.matcher(output);
        boolean found = matcher.find();
        boolean meta = found && (Integer.parseInt(matcher.group(1)) > 1
                || Integer.parseInt(matcher.group(1)) == 1 && Integer.parseInt(matcher.group(2)) >= 6);
        Assumptions.assumeTrue(meta, binary + " is '" + output + "'; the store needs memcached 1.6 or later (the meta "
                + "protocol), so the memcached tests are skipped: install a newer one or pass -D" + BINARY_PROPERTY);
        return matcher.group(1) + "." + matcher.group(2) + "." + matcher.group(3);
    }

    private static int freePort() {
        return LoopbackPorts.free(SYSTEM_PORT);
    }

    /**
     * A plain text-protocol connection of the harness, independent of the client under test: sends lines in one
     * write and reads reply lines (never values: the harness sends no {@code v} flag).
     */
    private static final class AdminConnection implements AutoCloseable {

        private final Socket socket;
        private final InputStream in;

        AdminConnection(int port) {
            try {
                socket = new Socket();
                socket.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 5_000);
                socket.setSoTimeout(30_000);
                in = new BufferedInputStream(socket.getInputStream());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot connect to memcached on port " + port, e);
            }
        }

        /** Writes {@code lines}, each ended by CRLF, in one write; reads {@code replies} reply lines. */
        List<String> exchange(List<String> lines, int replies) {
            try {
                StringBuilder batch = new StringBuilder();
                lines.forEach(line -> batch.append(line).append("\r\n"));
                socket.getOutputStream().write(batch.toString().getBytes(StandardCharsets.UTF_8));
                socket.getOutputStream().flush();
                List<String> answers = new ArrayList<>();
                for (int i = 0; i < replies; i++) {
                    answers.add(readLine());
                }
                return answers;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        /** Reads lines until one equals {@code last}, which is not returned. */
        List<String> readUntil(String last) {
            try {
                List<String> lines = new ArrayList<>();
                for (String line = readLine(); !line.equals(last); line = readLine()) {
                    lines.add(line);
                }
                return lines;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        private String readLine() throws IOException {
            StringBuilder line = new StringBuilder();
            for (int next = in.read(); next != '\n'; next = in.read()) {
                if (next < 0) {
                    throw new EOFException("memcached closed the connection");
                }
                if (next != '\r') {
                    line.append((char) next);
                }
            }
            return line.toString();
        }

        @Override
        public void close() {
            try {
                socket.close();
            } catch (IOException e) {
                // given up either way
            }
        }
    }
}
