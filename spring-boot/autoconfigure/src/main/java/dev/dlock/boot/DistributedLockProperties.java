package dev.dlock.boot;

import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.core.LeaseLostPolicy;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code dlock.*} settings of the Spring Boot starter: plain values with the library's defaults.
 * The builders they are handed to (lock manager, store, aspect support) own the rules; the
 * auto-configuration names the property when a builder refuses a value, so a bad value stops the start.
 */
@ConfigurationProperties(prefix = DistributedLockProperties.PREFIX)
public class DistributedLockProperties {

    /** The prefix of every dlock property. */
    public static final String PREFIX = "dlock";

    /** Whether dlock is auto-configured at all. */
    private boolean enabled = true;

    /**
     * Where locks are kept: redis, zookeeper, jdbc (the application's DataSource), memcached (efficiency only), or
     * in-memory (within this JVM only: for tests and single-instance apps). Not set: the store whose module is on
     * the class path (Redis, then ZooKeeper, then JDBC, then memcached).
     */
    private Store store;

    /** Prepended to every Redis key and channel; deprecated: use dlock.redis.key-prefix. */
    private String keyPrefix;

    /** How long a call waits for a lock when its annotation gives no waitTime; 0 tries once. */
    private Duration waitTime = LockManager.DEFAULT_WAIT_TIME;

    /** The watchdog-managed lease: renewed every third of it while the lock is held (at least 30ms). */
    private Duration leaseTime = LockManager.DEFAULT_LEASE_TIME;

    /** How often threads waiting for a lock re-check the annotation's abortIf condition. */
    private Duration abortCheckInterval = LockRequest.DEFAULT_ABORT_CHECK_INTERVAL;

    /** What releasing a lock whose lease was lost does: throw LockLostException, or log a warning. */
    private LeaseLostPolicy onLeaseLost = LockManager.DEFAULT_LEASE_LOST_POLICY;

    /**
     * Whether a released lock passes straight to the next thread of this instance waiting for the same key, when
     * the store supports it (Redis, in-memory): one store call with a fresh fencing token instead of a release
     * and an acquisition; once another instance has asked for the key, at most 8 more in a row, then the key is
     * freed so that it gets its chance.
     */
    private boolean localHandOff = true;

    /**
     * Whether dlock learns the order in which each thread nests lock names and logs one WARN per pair of names that
     * two call paths take in opposite orders (a potential deadlock), counted in dlock.lock.order.inversions; tens of
     * nanoseconds per acquisition.
     */
    private boolean lockOrderWarnings = true;

    /**
     * Whether the start checks the lock store once, after every bean is created and before the application takes
     * traffic: one round trip (Redis PING; for ZooKeeper, a connection within dlock.zookeeper.connection-timeout;
     * for JDBC, a query on the lock table), failing the start with the property to fix. Off: the store is first
     * contacted by the first lock.
     */
    private boolean verifyOnStart = true;

    private final Watchdog watchdog = new Watchdog();
    private final Aspect aspect = new Aspect();
    private final Metrics metrics = new Metrics();
    private final Observation observation = new Observation();
    private final Redis redis = new Redis();

    /** Whether dlock is auto-configured at all. */
    public boolean isEnabled() {
        return enabled;
    }

    /** Switches the whole auto-configuration on or off. */
    public void setEnabled(boolean enabled) {
        this.enabled = enabled;
    }

    /** Where locks are kept; null when chosen by the store module on the class path. */
    public Store getStore() {
        return store;
    }

    /** Chooses where locks are kept. */
    public void setStore(Store store) {
        this.store = store;
    }

    /** The prefix of every Redis key and channel, or null; replaced by {@code dlock.redis.key-prefix}. */
    @Deprecated(since = "0.1.0", forRemoval = true)
    @DeprecatedConfigurationProperty(replacement = "dlock.redis.key-prefix", since = "0.1.0")
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /** Sets the deprecated key prefix; {@code dlock.redis.key-prefix} wins when both are set. */
    @Deprecated(since = "0.1.0", forRemoval = true)
    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }

    /** The default wait time. */
    public Duration getWaitTime() {
        return waitTime;
    }

    /** Sets the default wait time. */
    public void setWaitTime(Duration waitTime) {
        this.waitTime = waitTime;
    }

    /** The watchdog-managed lease. */
    public Duration getLeaseTime() {
        return leaseTime;
    }

    /** Sets the watchdog-managed lease. */
    public void setLeaseTime(Duration leaseTime) {
        this.leaseTime = leaseTime;
    }

    /** How often waiters re-check abortIf. */
    public Duration getAbortCheckInterval() {
        return abortCheckInterval;
    }

    /** Sets how often waiters re-check abortIf. */
    public void setAbortCheckInterval(Duration abortCheckInterval) {
        this.abortCheckInterval = abortCheckInterval;
    }

    /** What releasing a lost lease does. */
    public LeaseLostPolicy getOnLeaseLost() {
        return onLeaseLost;
    }

    /** Sets what releasing a lost lease does ({@code throw} or {@code log}). */
    public void setOnLeaseLost(LeaseLostPolicy onLeaseLost) {
        this.onLeaseLost = onLeaseLost;
    }

    /** Whether released locks pass straight to the next local waiter. */
    public boolean isLocalHandOff() {
        return localHandOff;
    }

    /** Sets whether released locks pass straight to the next local waiter. */
    public void setLocalHandOff(boolean localHandOff) {
        this.localHandOff = localHandOff;
    }

    /** Whether lock names nested in opposite orders are warned about. */
    public boolean isLockOrderWarnings() {
        return lockOrderWarnings;
    }

    /** Sets whether lock names nested in opposite orders are warned about. */
    public void setLockOrderWarnings(boolean lockOrderWarnings) {
        this.lockOrderWarnings = lockOrderWarnings;
    }

    /** Whether the start checks the lock store once. */
    public boolean isVerifyOnStart() {
        return verifyOnStart;
    }

    /** Sets whether the start checks the lock store once. */
    public void setVerifyOnStart(boolean verifyOnStart) {
        this.verifyOnStart = verifyOnStart;
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

    /** The observation (tracing) settings. */
    public Observation getObservation() {
        return observation;
    }

    /** The Redis connection settings. */
    public Redis getRedis() {
        return redis;
    }

    /** {@code dlock.watchdog.*}: the thread that renews watchdog-managed leases. */
    public static class Watchdog {

        /** The most leases renewed in one Redis call (1 to 10000). */
        private int batchSize = LockManager.DEFAULT_RENEWAL_BATCH_SIZE;

        /** The most leases renewed in one Redis call. */
        public int getBatchSize() {
            return batchSize;
        }

        /** Sets the renewal batch size. */
        public void setBatchSize(int batchSize) {
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

    /** {@code dlock.observation.*}: Micrometer observations (trace spans) of lock waits and holds. */
    public static class Observation {

        /** Whether lock waits and holds are observed when an ObservationRegistry exists. */
        private boolean enabled = true;

        /** Whether spans carry the lock key (a high-cardinality tag, never a metric tag); off when keys hold personal data. */
        private boolean keyInSpans = true;

        /** Whether lock waits and holds are observed. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Switches the observations on or off. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** Whether spans carry the lock key. */
        public boolean isKeyInSpans() {
            return keyInSpans;
        }

        /** Puts the lock key in spans, or keeps it out. */
        public void setKeyInSpans(boolean keyInSpans) {
            this.keyInSpans = keyInSpans;
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

        /** Name of the SSL bundle (spring.ssl.bundle.*) for TLS: trust material and client certificate; turns TLS on. */
        private String sslBundle;

        /**
         * Whether a TLS connection checks that the server certificate names the host connected to (its
         * subject alternative names); switch off only for servers whose certificates cannot match.
         */
        private boolean sslVerifyHostname = true;

        /** Prepended to every Redis key and channel (default dlock:); must not contain braces (they would break the hash tag). */
        private String keyPrefix;

        /**
         * How long a fair waiter (fair = true) or a writer waiting for readers keeps its place without asking again
         * (default 3 s): the longest a waiter whose JVM died delays the others. Give every instance the same value.
         */
        private Duration fairWaiterTimeout;

        /**
         * Whether lock and unlock scripts that several threads send at the same moment share one pipeline per
         * Redis node (one write and one read for all of them); a lone call goes straight through. On by default.
         */
        private boolean coalesceRoundTrips = true;

        private final Sentinel sentinel = new Sentinel();
        private final Cluster cluster = new Cluster();
        private final Redlock redlock = new Redlock();

        /** Whether concurrent scripts to one node share a pipeline. */
        public boolean isCoalesceRoundTrips() {
            return coalesceRoundTrips;
        }

        /** Sets whether concurrent scripts to one node share a pipeline. */
        public void setCoalesceRoundTrips(boolean coalesceRoundTrips) {
            this.coalesceRoundTrips = coalesceRoundTrips;
        }

        /** How long a silent fair waiter keeps its place, or null for the store's default. */
        public Duration getFairWaiterTimeout() {
            return fairWaiterTimeout;
        }

        /** Sets how long a silent fair waiter keeps its place. */
        public void setFairWaiterTimeout(Duration fairWaiterTimeout) {
            this.fairWaiterTimeout = fairWaiterTimeout;
        }

        /** The prefix of every Redis key and channel, or null for the default. */
        public String getKeyPrefix() {
            return keyPrefix;
        }

        /** Sets the prefix of every Redis key and channel. */
        public void setKeyPrefix(String keyPrefix) {
            this.keyPrefix = keyPrefix;
        }

        /** The Redis URL, or null. */
        public String getUrl() {
            return url;
        }

        /** Sets the Redis URL. */
        public void setUrl(String url) {
            this.url = url;
        }

        /** The connect and read timeout, or null for the client's default. */
        public Duration getTimeout() {
            return timeout;
        }

        /** Sets the connect and read timeout. */
        public void setTimeout(Duration timeout) {
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

        /** The SSL bundle's name, or null. */
        public String getSslBundle() {
            return sslBundle;
        }

        /** Sets the SSL bundle's name. */
        public void setSslBundle(String sslBundle) {
            this.sslBundle = sslBundle;
        }

        /** Whether TLS connections verify the server's host name against its certificate. */
        public boolean isSslVerifyHostname() {
            return sslVerifyHostname;
        }

        /** Switches host name verification of TLS connections on or off. */
        public void setSslVerifyHostname(boolean sslVerifyHostname) {
            this.sslVerifyHostname = sslVerifyHostname;
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
            this.nodes = nodes;
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
            this.nodes = nodes;
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
            this.nodes = nodes;
        }
    }

    /** The lock stores the starter can configure. */
    public enum Store {
        /** Redis: standalone, Sentinel, Cluster or Redlock, from {@code dlock.redis.*} or {@code spring.data.redis.*}. */
        REDIS,
        /** ZooKeeper through Curator, from {@code dlock.zookeeper.*} or the application's {@code CuratorFramework}. */
        ZOOKEEPER,
        /** In this JVM's memory: locks exclude threads of this application instance only, never other instances. */
        IN_MEMORY,
        /** A relational database (PostgreSQL, MariaDB, H2) through the application's DataSource; see {@code dlock.jdbc.*}. */
        JDBC,
        /** memcached, from {@code dlock.memcached.*}: efficiency only, an eviction or a restart drops a held lock silently. */
        MEMCACHED
    }
}
