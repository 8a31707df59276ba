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

    /** The binary to run, in this order: property or environment path, PATH, embedded jar. */
    static Path resolve() {
        String configured = System.getProperty(PROPERTY);
        if (configured == null || configured.isBlank()) {
            configured = System.getenv(ENVIRONMENT);
        }
        if (configured != null && !configured.isBlank()) {
            if (EMBEDDED.equalsIgnoreCase(configured.trim())) {
                return embedded();
            }
            Path path = Path.of(configured.trim());
            if (!Files.isExecutable(path)) {
                throw new IllegalStateException("The Redis server configured by " + PROPERTY + "/" + ENVIRONMENT
                        + " is not an executable file: " + path + ". " + howToInstall());
            }
            return path;
        }
        Path onPath = findOnPath();
        if (onPath != null) {
            return onPath;
        }
        return embedded();
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
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "").toLowerCase(Locale.ROOT);
        boolean arm = arch.equals("aarch64") || arch.startsWith("arm");
        boolean x64 = arch.equals("amd64") || arch.equals("x86_64");
        if (os.contains("linux") && x64) {
            return "redis-server-6.2.6-v5-linux-amd64";
        }
        if (os.contains("linux") && arm) {
            return "redis-server-6.2.7-linux-arm64";
        }
        if (os.contains("mac") && x64) {
            return "redis-server-6.2.6-v5-darwin-amd64";
        }
        if (os.contains("mac") && arm) {
            return "redis-server-6.2.6-v5-darwin-arm64";
        }
        throw new IllegalStateException("No embedded Redis binary for os.name='" + os + "', os.arch='" + arch + "'. "
                + howToInstall());
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
            Path candidate = Path.of(directory, "redis-server");
            if (Files.isExecutable(candidate) && !Files.isDirectory(candidate)) {
                return candidate;
            }
        }
        return null;
    }

    static String howToInstall() {
        return "Install Redis (Debian/Ubuntu: 'sudo apt-get install redis-server', macOS: 'brew install redis') "
                + "or point -D" + PROPERTY + "=/path/to/redis-server (or env " + ENVIRONMENT + ") at a binary; "
                + "-D" + PROPERTY + "=" + EMBEDDED + " uses the binary inside embedded-redis.";
    }
}
