package dev.dlock.examples.demo;

import dev.dlock.testkit.redis.RedisServerProcess;

import java.io.IOException;
import java.io.PrintStream;
import java.net.ServerSocket;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The one-command demo: starts Redis (unless given one), starts instances of the flash-sale
 * service as separate JVMs, fires concurrent purchases at all of them with a progress bar, and
 * prints what happened — read back from the services' own metrics. Stops everything it started,
 * also on Ctrl-C or failure.
 */
public final class FlashSaleDemo implements AutoCloseable {

    private static final Pattern STATUS = Pattern.compile("\"status\"\\s*:\\s*\"(\\w+)\"");

    /** What the demo is asked to do. */
    public record Options(int requests, int stock, int concurrency, int instances, String productId,
                          String redisUrl, List<String> instanceCommand, PrintStream out) {

        /** Parses {@code --requests N --stock N --concurrency N --instances N --product ID --redis URL}. */
        static Options parse(String[] args, PrintStream out) {
            int requests = 2000;
            int stock = 100;
            int concurrency = 64;
            int instances = 2;
            String product = "sku-1";
            String redis = null;
            for (int i = 0; i < args.length; i++) {
                String value = i + 1 < args.length ? args[i + 1] : null;
                switch (args[i]) {
                    case "--requests" -> requests = Integer.parseInt(value);
                    case "--stock" -> stock = Integer.parseInt(value);
                    case "--concurrency" -> concurrency = Integer.parseInt(value);
                    case "--instances" -> instances = Integer.parseInt(value);
                    case "--product" -> product = value;
                    case "--redis" -> redis = value;
                    case "--help" -> throw new IllegalArgumentException("usage");
                    default -> throw new IllegalArgumentException("unknown option " + args[i]);
                }
                i++;
            }
            return new Options(requests, stock, concurrency, instances, product, redis, thisApplication(), out);
        }
    }

    /** What the demo saw. {@code oversold} counts sales beyond the stock actually taken. */
    public record Summary(int requests, int stock, long sold, long soldOut, long aborted, long rejected, long fencedOff,
                          long errors, int remaining, long oversold, int ledgerEntries, boolean fencingTokensIncreasing,
                          double acquireWaitP50Millis, double acquireWaitP99Millis, double renewals, List<Integer> ports) {

        /** True when the sale went as a lock should make it go. */
        public boolean correct() {
            return oversold == 0 && sold == stock && remaining == 0 && errors == 0 && fencedOff == 0
                    && fencingTokensIncreasing && ledgerEntries == stock;
        }
    }

    private final Options options;
    private final HttpClient http = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();
    private final List<Process> processes = new ArrayList<>();
    private final Thread cleanup = new Thread(this::close, "flash-sale-demo-cleanup");
    private RedisServerProcess redis;
    private Path workDir;

    /** Prepares a demo; nothing is started before {@link #execute()}. */
    public FlashSaleDemo(Options options) {
        this.options = options;
    }

    /** Entry point of {@code java -jar dlock-example.jar demo [options]}; returns the process exit code. */
    public static int run(String[] args) {
        Options options;
        try {
            options = Options.parse(args, System.out);
        } catch (RuntimeException e) {
            System.err.println("""
                    usage: java -jar examples/target/dlock-example.jar demo [options]
                      --requests N     purchases to fire (default 2000)
                      --stock N        items on sale (default 100)
                      --concurrency N  purchases in flight at once (default 64)
                      --instances N    service instances, each its own JVM (default 2)
                      --product ID     product id (default sku-1)
                      --redis URL      use this Redis (redis://host:port) instead of starting one""");
            return 2;
        }
        try (FlashSaleDemo demo = new FlashSaleDemo(options)) {
            Summary summary = demo.execute();
            return summary.correct() ? 0 : 1;
        } catch (Exception e) {
            System.err.println("demo failed: " + e);
            return 1;
        }
    }

    /** Starts everything, runs the sale, prints and returns the summary. */
    public Summary execute() throws Exception {
        Runtime.getRuntime().addShutdownHook(cleanup);
        PrintStream out = options.out();
        workDir = Files.createTempDirectory("dlock-demo-");
        String redisUrl = options.redisUrl();
        if (redisUrl == null) {
            redis = RedisServerProcess.start();
            redisUrl = redis.uri();
            out.println("Started Redis " + redis.version() + " at " + redisUrl + " (" + redis.binary() + ")");
        } else {
            out.println("Using Redis at " + redisUrl);
        }
        List<Integer> ports = startInstances(redisUrl, out);
        send("PUT", ports.get(0), "/products/" + options.productId() + "/stock?quantity=" + options.stock(), null);

        out.printf(Locale.ROOT, "Selling %,d items to %,d concurrent purchases (%d in flight) across %d instances%n",
                options.stock(), options.requests(), options.concurrency(), ports.size());
        Map<String, LongAdder> outcomes = fire(ports, out);

        String product = send("GET", ports.get(0), "/products/" + options.productId(), null).body();
        int remaining = intField(product, "remaining");
        long stockTaken = options.stock() - remaining;
        long sold = count(outcomes, "SOLD");
        Histogram waits = new Histogram();
        double renewals = 0;
        for (int port : ports) {
            String scrape = send("GET", port, "/actuator/prometheus", null).body();
            waits.add(scrape, "dlock_lock_acquire_seconds_bucket", "result=\"acquired\"");
            renewals += PrometheusText.sum(scrape, "dlock_watchdog_renewals_total", "result=\"renewed\"");
        }
        Summary summary = new Summary(options.requests(), options.stock(), sold, count(outcomes, "SOLD_OUT"),
                count(outcomes, "ABORTED"), count(outcomes, "REJECTED"), count(outcomes, "FENCED_OFF"),
                count(outcomes, "ERROR"), remaining, Math.max(0, sold - stockTaken), intField(product, "ledgerEntries"),
                product.contains("\"fencingTokensIncreasing\":true"), waits.quantile(0.5) * 1000, waits.quantile(0.99) * 1000,
                renewals, ports);
        print(summary, out);
        return summary;
    }

    private List<Integer> startInstances(String redisUrl, PrintStream out) throws Exception {
        List<Integer> ports = new ArrayList<>();
        for (int i = 0; i < options.instances(); i++) {
            int port = freePort();
            List<String> command = new ArrayList<>(options.instanceCommand());
            command.add("--server.port=" + port);
            command.add("--dlock.redis.url=" + redisUrl);
            command.add("--spring.main.banner-mode=off");
            Path log = workDir.resolve("instance-" + port + ".log");
            processes.add(new ProcessBuilder(command).redirectErrorStream(true).redirectOutput(log.toFile()).start());
            ports.add(port);
            out.println("Starting instance " + (i + 1) + " on port " + port + " (log: " + log + ")");
        }
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
        for (int i = 0; i < ports.size(); i++) {
            while (!healthy(ports.get(i))) {
                if (!processes.get(i).isAlive()) {
                    throw new IllegalStateException("instance on port " + ports.get(i) + " exited; see "
                            + workDir.resolve("instance-" + ports.get(i) + ".log"));
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("instance on port " + ports.get(i) + " not healthy within 120 s");
                }
                Thread.sleep(200);
            }
        }
        out.println("All instances are up: " + ports);
        return ports;
    }

    private Map<String, LongAdder> fire(List<Integer> ports, PrintStream out) throws InterruptedException {
        Map<String, LongAdder> outcomes = new ConcurrentHashMap<>();
        AtomicInteger done = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(options.concurrency());
        for (int i = 0; i < options.requests(); i++) {
            int n = i;
            pool.execute(() -> {
                outcomes.computeIfAbsent(purchase(n, ports), s -> new LongAdder()).increment();
                done.incrementAndGet();
            });
        }
        pool.shutdown();
        while (!pool.awaitTermination(100, TimeUnit.MILLISECONDS)) {
            progress(done.get(), outcomes, out);
        }
        progress(done.get(), outcomes, out);
        out.println();
        return outcomes;
    }

    /** One purchase: most through the annotation, every 20th async, every 20th programmatic. */
    private String purchase(int n, List<Integer> ports) {
        String path = switch (n % 20) {
            case 0 -> "/orders/async";
            case 1 -> "/orders/programmatic";
            default -> "/orders";
        };
        String body = String.format(Locale.ROOT, "{\"orderId\":\"order-%d\",\"productId\":\"%s\",\"buyer\":\"buyer-%d\"}",
                n, options.productId(), n);
        try {
            Matcher status = STATUS.matcher(send("POST", ports.get(n % ports.size()), path, body).body());
            return status.find() ? status.group(1) : "ERROR";
        } catch (IOException | RuntimeException e) {
            return "ERROR";
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return "ERROR";
        }
    }

    private void progress(int done, Map<String, LongAdder> outcomes, PrintStream out) {
        int width = 40;
        int filled = options.requests() == 0 ? width : done * width / options.requests();
        out.printf(Locale.ROOT, "\r  [%s%s] %,6d/%,d  sold %,d  aborted %,d  rejected %,d  ",
                "#".repeat(filled), ".".repeat(width - filled), done, options.requests(),
                count(outcomes, "SOLD"), count(outcomes, "ABORTED"), count(outcomes, "REJECTED"));
        out.flush();
    }

    private static void print(Summary s, PrintStream out) {
        out.println();
        out.printf(Locale.ROOT, "Flash sale: %,d purchases for %,d items over %d instances (ports %s)%n",
                s.requests(), s.stock(), s.ports().size(), s.ports());
        out.printf(Locale.ROOT, "  sold         %,7d   (stock %,d, left %,d)%n", s.sold(), s.stock(), s.remaining());
        out.printf(Locale.ROOT, "  oversold     %,7d%n", s.oversold());
        out.printf(Locale.ROOT, "  aborted      %,7d   (gave up waiting the moment the product sold out: abortIf)%n", s.aborted());
        out.printf(Locale.ROOT, "  sold out     %,7d   (got the lock, nothing left)%n", s.soldOut());
        out.printf(Locale.ROOT, "  rejected     %,7d   (wait time ran out)%n", s.rejected());
        out.printf(Locale.ROOT, "  errors       %,7d%n", s.errors());
        out.printf(Locale.ROOT, "  ledger       %,7d entries, fencing tokens strictly increasing: %s%n",
                s.ledgerEntries(), s.fencingTokensIncreasing() ? "yes" : "NO");
        out.printf(Locale.ROOT, "  acquire wait p50 %.1f ms, p99 %.1f ms (dlock_lock_acquire_seconds, all instances)%n",
                s.acquireWaitP50Millis(), s.acquireWaitP99Millis());
        out.printf(Locale.ROOT, "  watchdog renewals %,.0f%n", s.renewals());
        out.println(s.correct() ? "OK: nothing oversold." : "FAILED: the sale did not add up.");
    }

    private boolean healthy(int port) {
        try {
            HttpResponse<String> health = send("GET", port, "/actuator/health", null);
            return health.statusCode() == 200 && health.body().contains("\"UP\"");
        } catch (IOException | InterruptedException e) {
            return false;
        }
    }

    private HttpResponse<String> send(String method, int port, String path, String json) throws IOException, InterruptedException {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                .timeout(Duration.ofSeconds(60));
        request.method(method, json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            request.header("Content-Type", "application/json");
        }
        return http.send(request.build(), HttpResponse.BodyHandlers.ofString());
    }

    private static long count(Map<String, LongAdder> outcomes, String status) {
        LongAdder adder = outcomes.get(status);
        return adder == null ? 0 : adder.sum();
    }

    private static int intField(String json, String field) {
        Matcher m = Pattern.compile("\"" + field + "\"\\s*:\\s*(-?\\d+)").matcher(json);
        if (!m.find()) {
            throw new IllegalStateException("no " + field + " in " + json);
        }
        return Integer.parseInt(m.group(1));
    }

    private static int freePort() throws IOException {
        try (ServerSocket socket = new ServerSocket(0)) {
            return socket.getLocalPort();
        }
    }

    /** How to start one more instance of this application: {@code java -jar} when run from the Boot jar. */
    static List<String> thisApplication() {
        String java = ProcessHandle.current().info().command().orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
        String command = System.getProperty("sun.java.command", "");
        String first = command.split(" ", 2)[0];
        if (first.endsWith(".jar")) {
            return List.of(java, "-jar", first);
        }
        return List.of(java, "-cp", System.getProperty("java.class.path"), "dev.dlock.examples.FlashSaleApplication");
    }

    /** Stops the instances and the Redis this demo started; safe to call twice. */
    @Override
    public synchronized void close() {
        for (Process process : processes) {
            process.destroy();
        }
        for (Process process : processes) {
            try {
                if (!process.waitFor(15, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                process.destroyForcibly();
                Thread.currentThread().interrupt();
            }
        }
        processes.clear();
        if (redis != null) {
            redis.close();
            redis = null;
        }
        if (Thread.currentThread() != cleanup) {
            try {
                Runtime.getRuntime().removeShutdownHook(cleanup);
            } catch (IllegalStateException | IllegalArgumentException e) {
                // Already shutting down, or never registered.
            }
        }
    }
}
