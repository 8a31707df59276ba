package dev.dlock.boot;

import dev.dlock.redis.JedisGeneration;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.ssl.SslBundle;
import org.springframework.boot.ssl.SslOptions;

import redis.clients.jedis.DefaultJedisClientConfig;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.JedisClientConfig;
import redis.clients.jedis.JedisCluster;
import redis.clients.jedis.JedisPooled;
import redis.clients.jedis.JedisSentineled;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.util.JedisURIHelper;

import javax.net.ssl.SSLParameters;
import javax.net.ssl.SSLSocketFactory;
import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.function.BiFunction;
import java.util.function.Function;
import java.util.stream.Collectors;

/**
 * Where the auto-configured Redis client connects, resolved from {@code dlock.redis.*} or, when
 * that is not set, from the standard {@code spring.data.redis.*} properties (read by name, so
 * Spring Data Redis need not be on the classpath). Owns the connection rules (URL schemes,
 * host:port nodes, one connection mode) and names the property that breaks one.
 *
 * @param source           the property prefix (or the connection details bean) the settings came from, for messages
 * @param nodes            the server (standalone), the sentinels, or the cluster seed nodes
 * @param sentinelMaster   the master's name in Sentinel mode, otherwise null
 * @param connectTimeout   null for the client's default
 * @param readTimeout      null for the client's default
 * @param sslBundle        the property naming the SSL bundle and the bundle's name ({@code property=name}), or null
 * @param detailsSslBundle the SSL bundle of Boot's connection details, or null
 * @param verifyHostname   whether TLS connections check the server certificate against the host name
 */
record RedisConnectionSettings(String source, Mode mode, List<HostAndPort> nodes, String sentinelMaster,
                               String username, String password, int database, boolean ssl,
                               Duration connectTimeout, Duration readTimeout,
                               String sentinelUsername, String sentinelPassword,
                               String sslBundle, SslBundle detailsSslBundle, boolean verifyHostname) {

    /** How the client reaches Redis. */
    enum Mode { STANDALONE, SENTINEL, CLUSTER }

    private static final String SPRING_DATA_REDIS = "spring.data.redis";
    private static final String DLOCK_REDIS = RedisStoreProperties.PREFIX;
    /** The source of a connection no setting names. */
    private static final String DEFAULT_SOURCE = "the default (neither dlock.redis.* nor spring.data.redis.* names a server)";
    private static final String DEFAULT_HOST = "localhost";
    private static final int DEFAULT_PORT = 6379;
    /** The JDK's name for RFC 2818 host name checks, which also match IP addresses against IP SANs. */
    private static final String HOSTNAME_CHECK = "HTTPS";

    /**
     * Resolves the settings, first match wins: {@code dlock.redis.*} when it names a server, else the
     * application's Redis connection details ({@code connectionDetails} gets the connect and read
     * timeouts and answers null when there are none), else {@code spring.data.redis.*}. Credentials and
     * the SSL bundle set under {@code dlock.redis.*} apply to the connection details too.
     */
    static RedisConnectionSettings resolve(RedisStoreProperties dlock, Binder binder,
                                           BiFunction<Duration, Duration, RedisConnectionSettings> connectionDetails) {
        Checked checked = Checked.of(dlock);
        if (checked.isConfigured()) {
            return fromDlock(dlock, checked);
        }
        Duration readTimeout = dlock.getTimeout() != null ? dlock.getTimeout() : duration(binder, "timeout");
        Duration connectTimeout = dlock.getTimeout() != null ? dlock.getTimeout() : duration(binder, "connect-timeout");
        RedisConnectionSettings details = connectionDetails.apply(connectTimeout, readTimeout);
        if (details == null) {
            return fromSpringData(binder, dlock);
        }
        String sslBundle = dlockBundle(dlock);
        return new RedisConnectionSettings(details.source, details.mode, details.nodes, details.sentinelMaster,
                firstNonNull(dlock.getUsername(), details.username), firstNonNull(dlock.getPassword(), details.password),
                details.database, details.ssl || dlock.isSsl() || sslBundle != null, connectTimeout, readTimeout,
                details.sentinelUsername, details.sentinelPassword, sslBundle,
                sslBundle != null ? null : details.detailsSslBundle, dlock.isSslVerifyHostname());
    }

    private static RedisConnectionSettings fromDlock(RedisStoreProperties redis, Checked checked) {
        RedisStoreProperties.Sentinel sentinel = redis.getSentinel();
        if (sentinel.getMaster() != null) {
            return new RedisConnectionSettings(DLOCK_REDIS, Mode.SENTINEL, hostsAndPorts(checked.sentinelNodes()),
                    sentinel.getMaster(), redis.getUsername(), redis.getPassword(), 0, redis.isSsl(),
                    redis.getTimeout(), redis.getTimeout(), sentinel.getUsername(), sentinel.getPassword(), dlockBundle(redis), null,
                    redis.isSslVerifyHostname());
        }
        if (!checked.clusterNodes().isEmpty()) {
            return new RedisConnectionSettings(DLOCK_REDIS, Mode.CLUSTER, hostsAndPorts(checked.clusterNodes()),
                    null, redis.getUsername(), redis.getPassword(), 0, redis.isSsl(),
                    redis.getTimeout(), redis.getTimeout(), null, null, dlockBundle(redis), null, redis.isSslVerifyHostname());
        }
        return standalone(DLOCK_REDIS, URI.create(checked.url()), redis.getUsername(), redis.getPassword(), redis.isSsl(),
                redis.getTimeout(), redis.getTimeout(), dlockBundle(redis), redis.isSslVerifyHostname());
    }

    /** Boot's own precedence: sentinel, then cluster, then url, then host and port. */
    private static RedisConnectionSettings fromSpringData(Binder binder, RedisStoreProperties dlock) {
        String username = firstNonNull(dlock.getUsername(), string(binder, "username"));
        String password = firstNonNull(dlock.getPassword(), string(binder, "password"));
        String bundle = string(binder, "ssl.bundle");
        String sslBundle = dlockBundle(dlock) != null ? dlockBundle(dlock)
                : bundle != null && !bundle.isBlank() ? SPRING_DATA_REDIS + ".ssl.bundle=" + bundle.trim() : null;
        boolean ssl = dlock.isSsl() || sslBundle != null
                || binder.bind(SPRING_DATA_REDIS + ".ssl.enabled", Boolean.class).orElse(false);
        Duration readTimeout = dlock.getTimeout() != null ? dlock.getTimeout() : duration(binder, "timeout");
        Duration connectTimeout = dlock.getTimeout() != null ? dlock.getTimeout() : duration(binder, "connect-timeout");
        int database = binder.bind(SPRING_DATA_REDIS + ".database", Integer.class).orElse(0);

        String master = string(binder, "sentinel.master");
        if (master != null) {
            List<String> sentinels = nodes(binder, "sentinel.nodes");
            return new RedisConnectionSettings(SPRING_DATA_REDIS, Mode.SENTINEL, hostsAndPorts(sentinels), master,
                    username, password, database, ssl, connectTimeout, readTimeout,
                    string(binder, "sentinel.username"), string(binder, "sentinel.password"), sslBundle, null,
                    dlock.isSslVerifyHostname());
        }
        List<String> clusterNodes = nodes(binder, "cluster.nodes");
        if (!clusterNodes.isEmpty()) {
            return new RedisConnectionSettings(SPRING_DATA_REDIS, Mode.CLUSTER, hostsAndPorts(clusterNodes), null,
                    username, password, 0, ssl, connectTimeout, readTimeout, null, null, sslBundle, null,
                    dlock.isSslVerifyHostname());
        }
        String url = validUrl(SPRING_DATA_REDIS + ".url", string(binder, "url"));
        if (url != null) {
            return standalone(SPRING_DATA_REDIS, URI.create(url), username, password, ssl, connectTimeout, readTimeout,
                    sslBundle, dlock.isSslVerifyHostname());
        }
        String host = string(binder, "host");
        Integer port = binder.bind(SPRING_DATA_REDIS + ".port", Integer.class).orElse(null);
        String source = host == null && port == null ? DEFAULT_SOURCE : SPRING_DATA_REDIS;
        HostAndPort server = new HostAndPort(firstNonNull(host, DEFAULT_HOST), port != null ? port : DEFAULT_PORT);
        return new RedisConnectionSettings(source, Mode.STANDALONE, List.of(server), null,
                username, password, database, ssl, connectTimeout, readTimeout, null, null, sslBundle, null,
                dlock.isSslVerifyHostname());
    }

    /** A standalone server from a URL; user, password and database in the URL take precedence. */
    private static RedisConnectionSettings standalone(String source, URI uri, String username, String password, boolean ssl,
                                                      Duration connectTimeout, Duration readTimeout, String sslBundle,
                                                      boolean verifyHostname) {
        return new RedisConnectionSettings(source, Mode.STANDALONE, List.of(JedisURIHelper.getHostAndPort(uri)), null,
                firstNonNull(JedisURIHelper.getUser(uri), username),
                firstNonNull(JedisURIHelper.getPassword(uri), password),
                JedisURIHelper.getDBIndex(uri), ssl || sslBundle != null || JedisURIHelper.isRedisSSLScheme(uri),
                connectTimeout, readTimeout, null, null, sslBundle, null, verifyHostname);
    }

    /**
     * One standalone client per master of {@code dlock.redis.redlock.nodes}; credentials in a URL win
     * over the shared ones. How many masters Redlock needs is the Redlock builder's rule.
     */
    static RedlockClients createRedlockClients(RedisStoreProperties redis,
                                               Function<String, SslBundle> sslBundles) {
        Checked checked = Checked.of(redis);
        List<UnifiedJedis> clients = new ArrayList<>();
        for (String node : checked.redlockNodes()) {
            clients.add(standalone(DLOCK_REDIS + ".redlock", URI.create(node), redis.getUsername(),
                    redis.getPassword(), redis.isSsl(), redis.getTimeout(), redis.getTimeout(), dlockBundle(redis),
                    redis.isSslVerifyHostname())
                    .createClient(sslBundles));
        }
        return new RedlockClients(clients);
    }

    /**
     * The {@code dlock.redis.*} values after each passed its own check (trimmed, blanks dropped) and
     * together name at most one connection mode.
     */
    private record Checked(String url, List<String> sentinelNodes, List<String> clusterNodes, List<String> redlockNodes,
                           boolean sentinelSet) {

        static Checked of(RedisStoreProperties redis) {
            Duration timeout = redis.getTimeout();
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw DistributedLockStartupException.invalid(DLOCK_REDIS + ".timeout", "must be positive, was "
                        + BuilderProperty.asWritten(timeout), null);
            }
            List<String> redlockNodes = new ArrayList<>();
            for (String node : redis.getRedlock().getNodes()) {
                String url = validUrl(DLOCK_REDIS + ".redlock.nodes", node);
                if (url == null) {
                    throw DistributedLockStartupException.invalid(DLOCK_REDIS + ".redlock.nodes", "it has a blank entry", null);
                }
                redlockNodes.add(url);
            }
            List<String> sentinelNodes = validNodes(DLOCK_REDIS + ".sentinel.nodes", redis.getSentinel().getNodes());
            Checked checked = new Checked(validUrl(DLOCK_REDIS + ".url", redis.getUrl()), sentinelNodes,
                    validNodes(DLOCK_REDIS + ".cluster.nodes", redis.getCluster().getNodes()), redlockNodes,
                    redis.getSentinel().getMaster() != null || !sentinelNodes.isEmpty());
            checked.requireOneMode(redis.getSentinel().getMaster());
            return checked;
        }

        /** True when any of url, sentinel and cluster is set, so dlock.redis (not spring.data.redis) is used. */
        boolean isConfigured() {
            return url != null || sentinelSet || !clusterNodes.isEmpty();
        }

        private void requireOneMode(String sentinelMaster) {
            if (!redlockNodes.isEmpty() && isConfigured()) {
                throw oneMode(DLOCK_REDIS + ".redlock.nodes cannot be combined with " + DLOCK_REDIS
                        + ".url, .sentinel or .cluster; Redlock locks on its own independent masters");
            }
            if (sentinelSet && !clusterNodes.isEmpty()) {
                throw oneMode(DLOCK_REDIS + ".sentinel and " + DLOCK_REDIS + ".cluster are both set");
            }
            if (url != null && (sentinelSet || !clusterNodes.isEmpty())) {
                throw oneMode(DLOCK_REDIS + ".url cannot be combined with " + DLOCK_REDIS
                        + "." + (sentinelSet ? "sentinel" : "cluster"));
            }
            if (sentinelSet && (sentinelMaster == null || sentinelNodes.isEmpty())) {
                throw new DistributedLockStartupException(DLOCK_REDIS + ".sentinel.master and " + DLOCK_REDIS
                        + ".sentinel.nodes must be set together", "Set both: the master's name and the sentinels "
                        + "(host:port,host:port), or neither.", null);
            }
        }

        private static DistributedLockStartupException oneMode(String description) {
            return new DistributedLockStartupException(description, "Configure one of " + DLOCK_REDIS + ".url (one server), "
                    + DLOCK_REDIS + ".sentinel.*, " + DLOCK_REDIS + ".cluster.nodes and " + DLOCK_REDIS
                    + ".redlock.nodes, and remove the others.", null);
        }
    }

    /**
     * Checks the {@code dlock.redis.*} values on their own and together, without connecting; for the
     * check before any bean is created.
     */
    static void check(RedisStoreProperties redis) {
        Checked.of(redis);
    }

    /**
     * Returns {@code url} when it is a redis:// or rediss:// URL with a host — valkey:// and valkeys:// written as their
     * Redis equivalents, since Valkey speaks the Redis protocol — null when blank; fails naming {@code property} otherwise.
     */
    static String validUrl(String property, String url) {
        if (url == null || url.isBlank()) {
            return null;
        }
        String trimmed = url.trim();
        if (!trimmed.contains("://")) {
            // Without user info, the value is host:port and can be shown in the URL to write; with it, it holds a password.
            throw new DistributedLockStartupException(property + " has no redis:// or rediss:// scheme",
                    urlAdvice(property, trimmed.contains("@") ? null : "redis://" + trimmed), null);
        }
        URI uri;
        try {
            uri = new URI(trimmed);
        } catch (URISyntaxException e) {
            throw new DistributedLockStartupException(property + " is not a valid URL: " + e.getReason(),
                    urlAdvice(property, null), null);
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        String redisScheme = switch (scheme) {
            case "redis", "valkey" -> "redis";
            case "rediss", "valkeys" -> "rediss";
            // The URL may carry a password: name the scheme only.
            default -> throw new DistributedLockStartupException(property + " must start with redis://, rediss://, valkey:// "
                    + "or valkeys://, was a URL with scheme '" + scheme + "'", urlAdvice(property, null), null);
        };
        if (uri.getHost() == null) {
            throw new DistributedLockStartupException(property + " must name a host, like redis://localhost:6379",
                    urlAdvice(property, null), null);
        }
        // The clients read only redis:// and rediss:// (TLS by the scheme): the rest of the URL stays as written.
        return redisScheme + trimmed.substring(scheme.length());
    }

    /** How to write a Redis URL, with {@code example} (safe to show) or a generic one. */
    private static String urlAdvice(String property, String example) {
        return "Write " + property + " as redis://host:port (rediss://host:port for TLS; valkey:// and valkeys:// work too), "
                + (example != null ? "here " + example : "for example redis://localhost:6379")
                + "; a user, password and database go in as redis://user:password@host:port/0.";
    }

    /**
     * Fails the start, naming the supported range and the way out, on a Jedis whose clients this class cannot build:
     * Jedis 8 removed {@code JedisPooled} and {@code JedisSentineled} (the store itself runs on 8; the starter's client
     * code must compile on Boot 3.5's Jedis 6 too). Left alone when the version cannot be read.
     */
    static void requireStarterJedis(String version) {
        if (version != null && JedisGeneration.majorVersion(version) >= 8) {
            throw new DistributedLockStartupException("dlock's Spring Boot starter cannot build its Redis client on Jedis "
                    + version + ": Jedis 8 removed JedisPooled and JedisSentineled, which it uses; the starter builds its "
                    + "client on Jedis 6.0 to 7.x (tested: 6.0.0, 7.4.1)",
                    "Use the Jedis your Spring Boot manages (7.4.x for Boot 4.1, 6.0.0 for 3.5), or keep Jedis 8 and declare "
                    + "your own client bean (a redis.clients.jedis.RedisClient, RedisSentinelClient or RedisClusterClient) "
                    + "annotated @DlockRedisClient: the Redis store itself runs on Jedis 8.0.2.", null);
        }
    }

    /** Returns {@code nodes} trimmed when each is host:port with a valid port; fails naming {@code property} otherwise. */
    static List<String> validNodes(String property, List<String> nodes) {
        List<String> valid = new ArrayList<>();
        if (nodes == null) {
            return valid;
        }
        for (String node : nodes) {
            String trimmed = node == null ? "" : node.trim();
            int colon = trimmed.lastIndexOf(':');
            boolean ok = colon > 0 && colon < trimmed.length() - 1;
            if (ok) {
                try {
                    int port = Integer.parseInt(trimmed.substring(colon + 1));
                    ok = port > 0 && port < 65536;
                } catch (NumberFormatException e) {
                    ok = false;
                }
            }
            if (!ok) {
                throw DistributedLockStartupException.invalid(property, "entries must be host:port, was '" + node + "'", null);
            }
            valid.add(trimmed);
        }
        return valid;
    }

    /**
     * Creates the client these settings describe; the caller owns (and closes) it. {@code sslBundles}
     * turns an SSL bundle reference ({@code property=name}) into the bundle, failing naming the property.
     * The clients are the ones Jedis 6 and Jedis 7 both have, so one code path serves both Boot lines.
     */
    @SuppressWarnings("deprecation")
    UnifiedJedis createClient(Function<String, SslBundle> sslBundles) {
        requireStarterJedis(JedisGeneration.version());
        SslBundle bundle = detailsSslBundle != null ? detailsSslBundle
                : sslBundle != null ? sslBundles.apply(sslBundle) : null;
        Tls tls = usesTls() ? tls(bundle) : null;
        JedisClientConfig config = clientConfig(username, password, database, tls);
        Set<HostAndPort> nodeSet = new LinkedHashSet<>(nodes);
        return switch (mode) {
            case STANDALONE -> new JedisPooled(nodes.get(0), config);
            case SENTINEL -> new JedisSentineled(sentinelMaster, config, nodeSet,
                    clientConfig(sentinelUsername, sentinelPassword, 0, tls));
            case CLUSTER -> new JedisCluster(nodeSet, config);
        };
    }

    private Tls tls(SslBundle bundle) {
        try {
            return Tls.of(bundle, verifyHostname);
        } catch (RuntimeException e) {
            // The cause may quote key store details; the message names the bundle's source only.
            String from = sslBundle != null ? sslBundle.substring(0, sslBundle.indexOf('=')) + " names SSL bundle '"
                    + sslBundle.substring(sslBundle.indexOf('=') + 1) + "'" : "The SSL bundle of " + source;
            throw new IllegalStateException(from + ", which cannot be used: " + e.getClass().getSimpleName(), e);
        }
    }

    private boolean usesTls() {
        return ssl || sslBundle != null || detailsSslBundle != null;
    }

    private JedisClientConfig clientConfig(String user, String secret, int db, Tls tls) {
        DefaultJedisClientConfig.Builder config = DefaultJedisClientConfig.builder()
                .user(user)
                .password(secret)
                .database(db)
                .ssl(tls != null);
        if (tls != null) {
            if (tls.socketFactory() != null) {
                config.sslSocketFactory(tls.socketFactory());
            }
            config.sslParameters(tls.parameters());
        }
        if (connectTimeout != null) {
            config.connectionTimeoutMillis(Math.toIntExact(connectTimeout.toMillis()));
        }
        if (readTimeout != null) {
            config.socketTimeoutMillis(Math.toIntExact(readTimeout.toMillis()));
        }
        return config.build();
    }

    /**
     * What a TLS connection is made with, as Spring Data Redis makes it from an SSL bundle (its socket
     * factory, and its options' ciphers and protocols as the socket's parameters), plus the host name
     * check that Jedis leaves off unless asked: the JDK's trust manager then refuses a certificate whose
     * subject alternative names do not match the host or IP address connected to.
     *
     * @param socketFactory the bundle's socket factory, or null for the JDK's default
     * @param parameters    the parameters every TLS socket gets (null fields keep the JDK's defaults)
     */
    record Tls(SSLSocketFactory socketFactory, SSLParameters parameters) {

        static Tls of(SslBundle bundle, boolean verifyHostname) {
            SSLParameters parameters = new SSLParameters();
            if (verifyHostname) {
                parameters.setEndpointIdentificationAlgorithm(HOSTNAME_CHECK);
            }
            if (bundle == null) {
                return new Tls(null, parameters);
            }
            SslOptions options = bundle.getOptions();
            if (options != null) {
                if (options.getCiphers() != null) {
                    parameters.setCipherSuites(options.getCiphers());
                }
                if (options.getEnabledProtocols() != null) {
                    parameters.setProtocols(options.getEnabledProtocols());
                }
            }
            return new Tls(bundle.createSslContext().getSocketFactory(), parameters);
        }
    }

    /** {@code dlock.redis.ssl-bundle=name} when that property is set, otherwise null. */
    private static String dlockBundle(RedisStoreProperties redis) {
        String bundle = redis.getSslBundle();
        return bundle == null || bundle.isBlank() ? null : DLOCK_REDIS + ".ssl-bundle=" + bundle.trim();
    }

    /** Why dlock cannot use this Redis, for a startup failure: where it is, from where, and {@code failure}'s reason. */
    String cannotUse(RuntimeException failure) {
        return "dlock cannot use Redis at " + nodes.stream().map(HostAndPort::toString).collect(Collectors.joining(", "))
                + " (" + mode.name().toLowerCase(Locale.ROOT) + ", from " + configuredBy() + "): " + failure.getMessage();
    }

    /** What to check when this Redis cannot be used. */
    String checkAdvice() {
        return "Check " + configuredBy() + ": Redis must be running there and let dlock's user in.";
    }

    /** The properties (or the connection details bean) that say where this Redis is. */
    private String configuredBy() {
        if (source.equals(DLOCK_REDIS + ".redlock")) {
            return source + ".nodes";
        }
        if (!source.equals(DLOCK_REDIS) && !source.equals(SPRING_DATA_REDIS)) {
            return source;
        }
        return switch (mode) {
            case STANDALONE -> source.equals(DLOCK_REDIS) ? DLOCK_REDIS + ".url"
                    : SPRING_DATA_REDIS + ".url, or " + SPRING_DATA_REDIS + ".host and " + SPRING_DATA_REDIS + ".port";
            case SENTINEL -> source + ".sentinel.nodes and " + source + ".sentinel.master";
            case CLUSTER -> source + ".cluster.nodes";
        };
    }

    /**
     * Why dlock connects where it does when no {@code dlock.redis.*} setting chose it (it fell back to
     * {@code spring.data.redis.*} or the default localhost:6379, possibly another application's Redis);
     * null when {@code dlock.redis.*} or the application's connection details chose it.
     */
    String fallbackReason() {
        if (!source.equals(SPRING_DATA_REDIS) && !source.equals(DEFAULT_SOURCE)) {
            return null;
        }
        return DLOCK_REDIS + ".url, .sentinel and .cluster are not set; set " + DLOCK_REDIS
                + ".url to choose the server dlock locks on";
    }

    /** Describes the target without credentials, for logs. */
    String describe() {
        return mode.name().toLowerCase(Locale.ROOT) + " " + nodes
                + (sentinelMaster != null ? " master '" + sentinelMaster + "'" : "")
                + (mode == Mode.STANDALONE ? " database " + database : "")
                + (usesTls() ? (verifyHostname ? " (TLS)" : " (TLS, host name not verified)") : "")
                + (sslBundle != null ? " with SSL bundle " + sslBundle.substring(sslBundle.indexOf('=') + 1) : "")
                + ", from " + (source.startsWith(DLOCK_REDIS) || source.startsWith(SPRING_DATA_REDIS) ? source + ".*" : source);
    }

    @Override
    public String toString() {
        return "RedisConnectionSettings[" + describe() + "]";
    }

    private static List<HostAndPort> hostsAndPorts(List<String> nodes) {
        return nodes.stream().map(HostAndPort::from).toList();
    }

    private static String string(Binder binder, String name) {
        return binder.bind(SPRING_DATA_REDIS + "." + name, String.class).orElse(null);
    }

    private static Duration duration(Binder binder, String name) {
        return binder.bind(SPRING_DATA_REDIS + "." + name, Duration.class).orElse(null);
    }

    private static List<String> nodes(Binder binder, String name) {
        String property = SPRING_DATA_REDIS + "." + name;
        return validNodes(property,
                binder.bind(property, Bindable.listOf(String.class)).orElse(List.of()));
    }

    private static <T> T firstNonNull(T first, T second) {
        return first != null ? first : second;
    }
}
