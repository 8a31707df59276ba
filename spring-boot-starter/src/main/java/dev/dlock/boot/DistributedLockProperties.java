package dev.dlock.boot;

import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.core.LeaseLostPolicy;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import org.springframework.boot.context.properties.ConfigurationProperties;

import java.net.URI;
import java.net.URISyntaxException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * The {@code dlock.*} settings of the Spring Boot starter. Every setter checks its value and fails
 * binding with a message that names the full property, so a bad value stops the start.
 */
@ConfigurationProperties(prefix = DistributedLockProperties.PREFIX)
public class DistributedLockProperties {

    /** The prefix of every dlock property. */
    public static final String PREFIX = "dlock";

    /** Whether dlock is auto-configured at all. */
    private boolean enabled = true;

    /** Prepended to every Redis key and channel; must not contain braces (they would break the hash tag). */
    private String keyPrefix = RedisLockBackend.DEFAULT_KEY_PREFIX;

    /** How long a call waits for a lock when its annotation gives no waitTime; 0 tries once. */
    private Duration waitTime = LockManager.DEFAULT_WAIT_TIME;

    /** The watchdog-managed lease: renewed every third of it while the lock is held (at least 30ms). */
    private Duration leaseTime = LockManager.DEFAULT_LEASE_TIME;

    /** How often threads waiting for a lock re-check the annotation's abortIf condition. */
    private Duration abortCheckInterval = Duration.ofMillis(100);

    /** What releasing a lock whose lease was lost does: throw LockLostException, or log a warning. */
    private LeaseLostPolicy onLeaseLost = LeaseLostPolicy.THROW;

    private final Watchdog watchdog = new Watchdog();
    private final Aspect aspect = new Aspect();
    private final Metrics metrics = new Metrics();
    private final Redis redis = new Redis();

    /** Whether dlock is auto-configured at all. */
    public boolean isEnabled() {
        return enabled;
    }

    /** Switches the whole auto-configuration on or off. */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** The prefix of every Redis key and channel. */
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /** Sets the Redis key prefix; braces are refused because they would break the hash tag. */
    public void setKeyPrefix(String keyPrefix) {
        if (keyPrefix == null || keyPrefix.indexOf('{') >= 0 || keyPrefix.indexOf('}') >= 0) {
            throw new IllegalArgumentException(PREFIX + ".key-prefix must not contain '{' or '}', was '" + keyPrefix + "'");
        }
        this.keyPrefix = keyPrefix;
    }

    /** The default wait time. */
    public Duration getWaitTime() {
        return waitTime;
    }

    /** Sets the default wait time; must not be negative. */
    public void setWaitTime(Duration waitTime) {
        this.waitTime = notNegative(PREFIX + ".wait-time", waitTime);
    }

    /** The watchdog-managed lease. */
    public Duration getLeaseTime() {
        return leaseTime;
    }

    /** Sets the watchdog-managed lease; at least 30ms. */
    public void setLeaseTime(Duration leaseTime) {
        if (leaseTime == null || leaseTime.toMillis() < 30) {
            throw new IllegalArgumentException(PREFIX + ".lease-time must be at least 30ms, was " + leaseTime);
        }
        this.leaseTime = leaseTime;
    }

    /** How often waiters re-check abortIf. */
    public Duration getAbortCheckInterval() {
        return abortCheckInterval;
    }

    /** Sets how often waiters re-check abortIf; must be positive. */
    public void setAbortCheckInterval(Duration abortCheckInterval) {
        if (abortCheckInterval == null || abortCheckInterval.isNegative() || abortCheckInterval.isZero()) {
            throw new IllegalArgumentException(PREFIX + ".abort-check-interval must be positive, was " + abortCheckInterval);
        }
        this.abortCheckInterval = abortCheckInterval;
    }

    /** What releasing a lost lease does. */
    public LeaseLostPolicy getOnLeaseLost() {
        return onLeaseLost;
    }

    /** Sets what releasing a lost lease does ({@code throw} or {@code log}). */
    public void setOnLeaseLost(LeaseLostPolicy onLeaseLost) {
        if (onLeaseLost == null) {
            throw new IllegalArgumentException(PREFIX + ".on-lease-lost must be throw or log");
        }
        this.onLeaseLost = onLeaseLost;
    }

    /** The watchdog settings. */
    public Watchdog getWatchdog() {
        return watchdog;
    }

    /** The aspect settings. */
    public Aspect getAspect() {
        return aspect;
    }

    /** The Micrometer settings. */
    public Metrics getMetrics() {
        return metrics;
    }

    /** The Redis connection settings. */
    public Redis getRedis() {
        return redis;
    }

    private static Duration notNegative(String property, Duration value) {
        if (value == null || value.isNegative()) {
            throw new IllegalArgumentException(property + " must not be negative, was " + value);
        }
        return value;
    }

    /** {@code dlock.watchdog.*}: the thread that renews watchdog-managed leases. */
    public static class Watchdog {

        /** The most leases renewed in one Redis call (1 to 10000). */
        private int batchSize = LockManager.DEFAULT_RENEWAL_BATCH_SIZE;

        /** The most leases renewed in one Redis call. */
        public int getBatchSize() {
            return batchSize;
        }

        /** Sets the renewal batch size, between 1 and {@link RedisLockBackend#MAX_RENEWAL_BATCH_SIZE}. */
        public void setBatchSize(int batchSize) {
            if (batchSize < 1 || batchSize > RedisLockBackend.MAX_RENEWAL_BATCH_SIZE) {
                throw new IllegalArgumentException(PREFIX + ".watchdog.batch-size must be between 1 and "
                        + RedisLockBackend.MAX_RENEWAL_BATCH_SIZE + ", was " + batchSize);
            }
            this.batchSize = batchSize;
        }
    }

    /** {@code dlock.aspect.*}: the {@code @DistributedLock} advice. */
    public static class Aspect {

        /** The aspect's order among advisors; the default runs it outside @Transactional, releasing after the commit. */
        private int order = DistributedLockAspect.DEFAULT_ORDER;

        /** The aspect's order. */
        public int getOrder() {
            return order;
        }

        /** Sets the aspect's order; keep it lower than the transaction advisor's. */
        public void setOrder(int order) {
            this.order = order;
        }
    }

    /** {@code dlock.metrics.*}: Micrometer meters. */
    public static class Metrics {

        /** Whether dlock meters are registered when a MeterRegistry exists. */
        private boolean enabled = true;

        /** Whether dlock meters are registered. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Switches the dlock meters on or off. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /**
     * {@code dlock.redis.*}: where the locks live. When none of url, sentinel and cluster is set, the
     * {@code spring.data.redis.*} settings are used instead.
     */
    public static class Redis {

        /** redis:// or rediss:// URL, with optional user:password@ and /database, e.g. redis://user:secret@host:6379/0. */
        private String url;

        /** Connect and read timeout of Redis calls. */
        private Duration timeout;

        /** User name for Redis ACL authentication; a user in the URL takes precedence. */
        private String username;

        /** Password for Redis authentication; a password in the URL takes precedence. */
        private String password;

        /** Whether to use TLS (a rediss:// URL turns it on too). */
        private boolean ssl;

        private final Sentinel sentinel = new Sentinel();
        private final Cluster cluster = new Cluster();
        private final Redlock redlock = new Redlock();

        /** The Redis URL, or null. */
        public String getUrl() {
            return url;
        }

        /** Sets the Redis URL; only redis:// and rediss:// are accepted. */
        public void setUrl(String url) {
            this.url = validUrl(PREFIX + ".redis.url", url);
        }

        /** The connect and read timeout, or null for the client's default. */
        public Duration getTimeout() {
            return timeout;
        }

        /** Sets the connect and read timeout; must be positive. */
        public void setTimeout(Duration timeout) {
            if (timeout != null && (timeout.isNegative() || timeout.isZero())) {
                throw new IllegalArgumentException(PREFIX + ".redis.timeout must be positive, was " + timeout);
            }
            this.timeout = timeout;
        }

        /** The ACL user name, or null. */
        public String getUsername() {
            return username;
        }

        /** Sets the ACL user name. */
        public void setUsername(String username) {
            this.username = username;
        }

        /** The password, or null. */
        public String getPassword() {
            return password;
        }

        /** Sets the password. */
        public void setPassword(String password) {
            this.password = password;
        }

        /** Whether TLS is used. */
        public boolean isSsl() {
            return ssl;
        }

        /** Switches TLS on or off. */
        public void setSsl(boolean ssl) {
            this.ssl = ssl;
        }

        /** The Sentinel settings. */
        public Sentinel getSentinel() {
            return sentinel;
        }

        /** The Cluster settings. */
        public Cluster getCluster() {
            return cluster;
        }

        /** The Redlock settings. */
        public Redlock getRedlock() {
            return redlock;
        }

        /** True when any of url, sentinel and cluster is set, so dlock.redis (not spring.data.redis) is used. */
        public boolean isConfigured() {
            return url != null || sentinel.master != null || !sentinel.nodes.isEmpty() || !cluster.nodes.isEmpty();
        }

        /** True when locks go to independent masters through Redlock instead of one Redis deployment. */
        public boolean isRedlock() {
            return !redlock.nodes.isEmpty();
        }

        /** Checks that the settings combine into one connection mode. */
        public void validate() {
            boolean sentinelSet = sentinel.master != null || !sentinel.nodes.isEmpty();
            if (isRedlock()) {
                if (isConfigured()) {
                    throw new IllegalArgumentException(PREFIX + ".redis.redlock.nodes cannot be combined with " + PREFIX
                            + ".redis.url, .sentinel or .cluster; Redlock locks on its own independent masters");
                }
                if (redlock.nodes.size() < 3) {
                    throw new IllegalArgumentException(PREFIX + ".redis.redlock.nodes needs at least 3 independent masters, was "
                            + redlock.nodes.size());
                }
            }
            if (sentinelSet && !cluster.nodes.isEmpty()) {
                throw new IllegalArgumentException(PREFIX + ".redis.sentinel and " + PREFIX
                        + ".redis.cluster are both set; configure one of them");
            }
            if (url != null && (sentinelSet || !cluster.nodes.isEmpty())) {
                throw new IllegalArgumentException(PREFIX + ".redis.url cannot be combined with " + PREFIX
                        + ".redis." + (sentinelSet ? "sentinel" : "cluster") + "; configure one of them");
            }
            if (sentinelSet && (sentinel.master == null || sentinel.nodes.isEmpty())) {
                throw new IllegalArgumentException(PREFIX + ".redis.sentinel.master and " + PREFIX
                        + ".redis.sentinel.nodes must be set together");
            }
        }
    }

    /** {@code dlock.redis.sentinel.*}: a Redis master found through Sentinel. */
    public static class Sentinel {

        /** Name of the master the sentinels monitor. */
        private String master;

        /** The sentinels, as host:port. */
        private List<String> nodes = new ArrayList<>();

        /** User name for authenticating with the sentinels themselves. */
        private String username;

        /** Password for authenticating with the sentinels themselves. */
        private String password;

        /** The master's name, or null. */
        public String getMaster() {
            return master;
        }

        /** Sets the master's name. */
        public void setMaster(String master) {
            this.master = master;
        }

        /** The sentinels as host:port. */
        public List<String> getNodes() {
            return nodes;
        }

        /** Sets the sentinels, each host:port. */
        public void setNodes(List<String> nodes) {
            this.nodes = validNodes(PREFIX + ".redis.sentinel.nodes", nodes);
        }

        /** The sentinels' user name, or null. */
        public String getUsername() {
            return username;
        }

        /** Sets the sentinels' user name. */
        public void setUsername(String username) {
            this.username = username;
        }

        /** The sentinels' password, or null. */
        public String getPassword() {
            return password;
        }

        /** Sets the sentinels' password. */
        public void setPassword(String password) {
            this.password = password;
        }
    }

    /** {@code dlock.redis.redlock.*}: the Redlock algorithm over independent Redis masters. */
    public static class Redlock {

        /** redis:// or rediss:// URLs of at least 3 independent masters (not replicas of each other). */
        private List<String> nodes = new ArrayList<>();

        /** The masters' URLs. */
        public List<String> getNodes() {
            return nodes;
        }

        /** Sets the masters' URLs, each redis:// or rediss://. */
        public void setNodes(List<String> nodes) {
            List<String> valid = new ArrayList<>();
            for (String node : nodes == null ? List.<String>of() : nodes) {
                String url = validUrl(PREFIX + ".redis.redlock.nodes", node);
                if (url == null) {
                    throw new IllegalArgumentException(PREFIX + ".redis.redlock.nodes has a blank entry");
                }
                valid.add(url);
            }
            this.nodes = valid;
        }
    }

    /** {@code dlock.redis.cluster.*}: a Redis Cluster. */
    public static class Cluster {

        /** Seed nodes of the cluster, as host:port; the others are discovered. */
        private List<String> nodes = new ArrayList<>();

        /** The seed nodes as host:port. */
        public List<String> getNodes() {
            return nodes;
        }

        /** Sets the seed nodes, each host:port. */
        public void setNodes(List<String> nodes) {
            this.nodes = validNodes(PREFIX + ".redis.cluster.nodes", nodes);
        }
    }

    /** Returns {@code url} when it is a redis:// or rediss:// URL with a host; fails naming {@code property} otherwise. */
    static String validUrl(String property, String url) {
        if (url == null || url.isBlank()) {
            return null;
        }
        URI uri;
        try {
            uri = new URI(url.trim());
        } catch (URISyntaxException e) {
            throw new IllegalArgumentException(property + " is not a valid URL: " + e.getReason());
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("redis") && !scheme.equals("rediss")) {
            // The URL may carry a password: name the scheme only.
            throw new IllegalArgumentException(property + " must start with redis:// or rediss://, was a URL with scheme '"
                    + scheme + "'");
        }
        if (uri.getHost() == null) {
            throw new IllegalArgumentException(property + " must name a host, like redis://localhost:6379");
        }
        return url.trim();
    }

    /** Returns {@code nodes} when each is host:port with a valid port; fails naming {@code property} otherwise. */
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
                throw new IllegalArgumentException(property + " entries must be host:port, was '" + node + "'");
            }
            valid.add(trimmed);
        }
        return valid;
    }
}
