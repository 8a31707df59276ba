package dev.dlock.aot;

import dev.dlock.core.StaleFencingTokenException;
import dev.dlock.redis.FencedRedis;
import dev.dlock.testkit.ChildJvm;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The application as a native build would run it, on the JVM: processed by {@code spring-boot:process-aot} at build
 * time (this module's pom), started in a child JVM with {@code -Dspring.aot.enabled=true} against a real Redis, then
 * driven over HTTP through a locked call whose key reads a record, a fenced write and the {@code dlock} endpoint. No
 * native image is built: there is no GraalVM here; what a native image would add is the hints checked first.
 */
class AotApplicationTest {

    private static final Path CLASSES = Path.of("target/classes");
    private static final Path HINTS = CLASSES.resolve("META-INF/native-image/dev.dlock/dlock-aot-tests/reachability-metadata.json");
    private static final Pattern PORT = Pattern.compile("started on port (\\d+)");

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private static RedisServerProcess redis;
    private static UnifiedJedis client;
    private static Child app;

    @BeforeAll
    static void start() throws Exception {
        redis = RedisServerProcess.start();
        client = RedisClient.builder().hostAndPort(new HostAndPort(redis.host(), redis.port())).build();
        app = Child.start(AotApplication.class);
        app.await(PORT);
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
        if (client != null) {
            client.close();
        }
        if (redis != null) {
            redis.close();
        }
    }

    @Test
    void theBuildGeneratedTheInitializerAndDlocksHints() throws IOException {
        assertThat(CLASSES.resolve("dev/dlock/aot/AotApplication__ApplicationContextInitializer.class")).exists();
        // Compacted: the file is pretty-printed, with its slashes escaped.
        String hints = Files.readString(HINTS).replaceAll("\\s+", "").replace("\\/", "/");
        // The aspect's processor: the record the key reads, with its accessors.
        assertThat(hints).contains("\"type\":\"dev.dlock.aot.Order\",\"allPublicMethods\":true,\"methods\":[{\"name\":\"id\",\"parameterTypes\":[]}");
        // The registrars of aot.factories: the expressions' root, the Lua scripts, the endpoint's answers.
        assertThat(hints).contains("dev.dlock.aspect.LockExpressionRoot", "\"glob\":\"dev/dlock/redis/*.lua\"",
                "dev.dlock.boot.actuate.DistributedLockEndpoint$LockHoldersDescriptor");
    }

    @Test
    void theApplicationRunsOnTheGeneratedInitializer() throws Exception {
        assertThat(app.output()).contains("Starting AOT-processed AotApplication");
        String aot = get("/aot").body();
        // No @Configuration parsing at run time: the bean definitions came from the generated code.
        // Without AOT the same application answers false, true and AnnotationConfigServletWebServerApplicationContext.
        assertThat(aot).contains("\"aotEnabled\":true", "\"configurationClassParsing\":false")
                .doesNotContain("AnnotationConfig");
    }

    @Test
    void withoutAGeneratedInitializerAotModeRefusesToStart() throws Exception {
        try (Child unprocessed = Child.start(NotProcessedMain.class)) {
            assertThat(unprocessed.process.waitFor(120, TimeUnit.SECONDS)).as("the unprocessed start ended").isTrue();
            assertThat(unprocessed.output()).contains("AOT initializer dev.dlock.aot.NotProcessedMain__ApplicationContextInitializer could not be found");
            assertThat(unprocessed.process.exitValue()).isNotZero();
        }
    }

    @Test
    void aLockedCallTakesItsKeyInTheStoreAndWritesFenced() throws Exception {
        CompletableFuture<HttpResponse<String>> shipping = HTTP.sendAsync(HttpRequest.newBuilder(
                        uri("/orders/42/ship?item=book&holdMillis=1500")).POST(HttpRequest.BodyPublishers.noBody()).build(),
                HttpResponse.BodyHandlers.ofString());

        // While it runs: the endpoint lists the lock, and the store says who holds the key.
        String held = awaitBody("/actuator/dlock", "\"count\":1");
        assertThat(held).contains("\"name\":\"order\"", "\"key\":\"order:42\"");
        HttpResponse<String> holders = get("/actuator/dlock/order?key=order:42");
        assertThat(holders.statusCode()).isEqualTo(200);
        assertThat(holders.body()).contains("\"acrossInstances\":true", "\"count\":1");

        HttpResponse<String> shipped = shipping.get(60, TimeUnit.SECONDS);
        assertThat(shipped.statusCode()).as(shipped.body()).isEqualTo(200);
        assertThat(shipped.body()).contains("\"key\":\"order:42\"", "\"holdersInStore\":1", "\"held\":true");
        long token = Long.parseLong(field(shipped.body(), "token"));
        assertThat(token).isPositive();

        // The fenced write went through the Lua script, with the lock's token beside the value.
        assertThat(client.get("stock:42")).isEqualTo("book");
        FencedRedis fenced = new FencedRedis(client);
        assertThat(fenced.acceptedToken("stock:42")).hasValue(token);
        assertThatThrownBy(() -> fenced.set("stock:42", "stale", token - 1)).isInstanceOf(StaleFencingTokenException.class);
        assertThat(client.get("stock:42")).isEqualTo("book");

        assertThat(get("/actuator/dlock").body()).contains("\"count\":0");
        assertThat(get("/actuator/dlock/order?key=order:42").body()).contains("\"count\":0");
    }

    private static String awaitBody(String path, String expected) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
        String body = "";
        while (System.nanoTime() < deadline) {
            body = get(path).body();
            if (body.contains(expected)) {
                return body;
            }
            Thread.sleep(20);
        }
        throw new AssertionError(path + " never answered " + expected + "; last: " + body);
    }

    private static String field(String json, String name) {
        Matcher matcher = Pattern.compile("\"" + name + "\":(-?\\d+)").matcher(json);
        assertThat(matcher.find()).as(name + " in " + json).isTrue();
        return matcher.group(1);
    }

    private static HttpResponse<String> get(String path) throws Exception {
        return HTTP.send(HttpRequest.newBuilder(uri(path)).build(), HttpResponse.BodyHandlers.ofString());
    }

    private static URI uri(String path) {
        return URI.create("http://127.0.0.1:" + app.port + path);
    }

    /** The application in a child JVM, in AOT mode, with its output in a file. */
    private static final class Child implements AutoCloseable {
        private final Process process;
        private final Path output;
        private int port;

        private Child(Process process, Path output) {
            this.process = process;
            this.output = output;
        }

        static Child start(Class<?> main) throws IOException {
            Path output = Files.createTempFile("dlock-aot-", ".log");
            List<String> command = new ArrayList<>(ChildJvm.command(main, "--server.port=0", "--server.address=127.0.0.1",
                    "--dlock.redis.url=" + redis.uri()));
            // A system property, before the class path: Boot reads it (AotDetector) before any configuration.
            command.add(1, "-Dspring.aot.enabled=true");
            Process process = new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(output.toFile()).start();
            return new Child(process, output);
        }

        /** Waits for the web server's port in the output; a Boot start beside other builds can take a minute. */
        void await(Pattern started) throws Exception {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
            while (System.nanoTime() < deadline) {
                Matcher matcher = started.matcher(output());
                if (matcher.find()) {
                    port = Integer.parseInt(matcher.group(1));
                    return;
                }
                if (!process.isAlive()) {
                    break;
                }
                Thread.sleep(20);
            }
            throw new AssertionError("the application did not start; its output:\n" + output());
        }

        String output() throws IOException {
            return Files.readString(output);
        }

        @Override
        public void close() {
            process.destroyForcibly();
            try {
                process.waitFor(10, TimeUnit.SECONDS);
                Files.deleteIfExists(output);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } catch (IOException e) {
                // A temporary file left behind is no failure of the test.
            }
        }
    }
}
