package dev.dlock.testkit.redis;

import java.io.File;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.Locale;

/** Finds the {@code redis-server} binary tests run: a configured path, the one on PATH, or the one inside embedded-redis. */
final class RedisBinaries {

    static final String PROPERTY = "dlock.redis.server";
    static final String ENVIRONMENT = "DLOCK_REDIS_SERVER";
    static final String EMBEDDED = "embedded";

    private static Path extractedEmbedded;

    private RedisBinaries() {
    }

    /** Whether {@link #resolve()} picks the embedded binary (without extracting it). */
    static boolean resolvesToEmbedded() {
        return chosenBinary() == null;
    }

    /** The binary to run, in this order: property or environment path, PATH, embedded jar. */
    static Path resolve() {
        Path chosen = chosenBinary();
        return chosen != null ? chosen : embedded();
    }

    /** The configured or PATH binary; null when the embedded one is to run (configured so, or nothing on the PATH). */
    private static Path chosenBinary() {
        String configured = configured();
        if (configured == null) {
            return findOnPath();
        }
        if (EMBEDDED.equalsIgnoreCase(configured)) {
            return null;
        }
        Path path = Path.of(configured);
        if (!Files.isExecutable(path)) {
            throw new IllegalStateException("The Redis server configured by " + PROPERTY + "/" + ENVIRONMENT
                    + " is not an executable file: " + path + ". " + howToInstall());
        }
        return path;
    }

    /** The trimmed property, else the environment variable; null when neither is set. */
    private static String configured() {
        String configured = System.getProperty(PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(ENVIRONMENT);
        }
        return configured == null || configured.isBlank() ? null : configured.trim();
    }

    /** The binary shipped inside the embedded-redis jar for this OS and CPU, extracted once per JVM. */
    static synchronized Path embedded() {
        if (extractedEmbedded != null && Files.isExecutable(extractedEmbedded)) {
            return extractedEmbedded;
        }
        String resource = embeddedResourceName();
        ClassLoader loader = RedisBinaries.class.getClassLoader();
        try (InputStream in = loader.getResourceAsStream(resource)) {
            if (in == null) {
                throw new IllegalStateException("No embedded Redis binary '" + resource
                        + "' on the classpath (com.github.codemonstur:embedded-redis missing?). " + howToInstall());
            }
            Path target = Files.createTempFile("dlock-" + resource + "-", "");
            Files.copy(in, target, StandardCopyOption.REPLACE_EXISTING);
            if (!target.toFile().setExecutable(true, true)) {
                throw new IllegalStateException("Cannot make " + target + " executable. " + howToInstall());
            }
            target.toFile().deleteOnExit();
            extractedEmbedded = target;
            return target;
        } catch (IOException e) {
            throw new IllegalStateException("Cannot extract the embedded Redis binary '" + resource + "'. "
                    + howToInstall(), e);
        }
    }

    private static String embeddedResourceName() {
        return embeddedResourceName(System.getProperty("os.name", ""), System.getProperty("os.arch", ""));
    }

    /** The embedded-redis resource for an OS and CPU, or an error naming what to install instead. */
    static String embeddedResourceName(String osName, String osArch) {
        String os = osName.toLowerCase(Locale.ROOT);
        String arch = osArch.toLowerCase(Locale.ROOT);
        boolean arm = arch.equals("aarch64") || arch.startsWith("arm");
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        boolean x86 = arch.equals("x86") || arch.equals("i386") || arch.equals("i686");
        if (os.contains("linux") && x64) {
            return "redis-server-6.2.6-v5-linux-amd64";
        }
        if (os.contains("linux") && arm) {
            return "redis-server-6.2.7-linux-arm64";
        }
        if (os.contains("linux") && x86) {
            return "redis-server-6.2.7-linux-386";
        }
        if (os.contains("mac") && x64) {
            return "redis-server-6.2.6-v5-darwin-amd64";
        }
        if (os.contains("mac") && arm) {
            return "redis-server-6.2.6-v5-darwin-arm64";
        }
        if (os.contains("windows")) {
            // embedded-redis has a Windows binary, but it is Redis 5.0: no ACLs, older than every server
            // dlock is tested on (6.2, 7.0), and the fault tests stop processes with POSIX signals.
            throw new IllegalStateException("No usable Redis binary for Windows: the one inside embedded-redis is"
                    + " Redis 5.0, and dlock's tests need Redis 6.2+ and a POSIX system (they pause servers with"
                    + " SIGSTOP). Run the tests in WSL 2 (Ubuntu: 'sudo apt-get install redis-server') or on"
                    + " Linux or macOS.");
        }
        throw new IllegalStateException("No embedded Redis binary for os.name='" + os + "', os.arch='" + arch
                + "' (embedded-redis has Linux x86-64/arm64/x86 and macOS x86-64/arm64). " + howToInstall());
    }

    private static Path findOnPath() {
        String path = System.getenv("PATH");
        if (path == null) {
            return null;
        }
        for (String directory : path.split(File.pathSeparator)) {
            if (directory.isBlank()) {
                continue;
            }
            for (String name : new String[] {"redis-server", "redis-server.exe"}) {
                Path candidate = Path.of(directory, name);
                if (Files.isExecutable(candidate) && !Files.isDirectory(candidate)) {
                    return candidate;
                }
            }
        }
        return null;
    }

    static String howToInstall() {
        return "Install Redis 6.2 or later (Debian/Ubuntu: 'sudo apt-get install redis-server', Fedora/RHEL:"
                + " 'sudo dnf install redis', macOS: 'brew install redis') "
                + "or point -D" + PROPERTY + "=/path/to/redis-server (or env " + ENVIRONMENT + ") at a binary; "
                + "-D" + PROPERTY + "=" + EMBEDDED + " uses the binary inside embedded-redis.";
    }
}
