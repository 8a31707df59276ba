package dev.dlock.boot;

import dev.dlock.aspect.DistributedLockAspect;
import dev.dlock.core.LeaseLostPolicy;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.DeprecatedConfigurationProperty;

import java.time.Duration;
import java.util.Locale;

/**
 * The store-neutral {@code dlock.*} settings of the Spring Boot starter: plain values with the library's defaults.
 * Each store's own settings have their own class ({@link RedisStoreProperties}, {@link JdbcStoreProperties},
 * {@link ZooKeeperStoreProperties}, {@link MemcachedStoreProperties}), registered by that store's auto-configuration.
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

    /** The Redis store's key prefix under its old name; deprecated: use dlock.redis.key-prefix. */
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
     * Whether a locked method's work is stopped when its lease is lost while it runs, for methods whose annotation says
     * whenLeaseLost = DEFAULT: a blocking method's thread is interrupted, an async result cancelled.
     */
    private boolean stopWorkOnLeaseLost;

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

    /**
     * The name this application instance gives itself in every owner token, so that any instance reading the store
     * can say who holds a lock (printable ASCII, at most 48 characters); unset: host name and process id.
     */
    private String instanceId;

    private final Watchdog watchdog = new Watchdog();
    private final Shutdown shutdown = new Shutdown();
    private final Aspect aspect = new Aspect();
    private final Metrics metrics = new Metrics();
    private final Observation observation = new Observation();
    private final Admin admin = new Admin();
    private final Web web = new Web();

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

    /** Whether locked methods' work is stopped when the lease is lost. */
    public boolean isStopWorkOnLeaseLost() {
        return stopWorkOnLeaseLost;
    }

    /** Sets whether locked methods' work is stopped when the lease is lost. */
    public void setStopWorkOnLeaseLost(boolean stopWorkOnLeaseLost) {
        this.stopWorkOnLeaseLost = stopWorkOnLeaseLost;
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

    /** This instance's name in owner tokens; null for host name and process id. */
    public String getInstanceId() {
        return instanceId;
    }

    /** Names this instance in owner tokens. */
    public void setInstanceId(String instanceId) {
        this.instanceId = instanceId;
    }

    /** The operator's settings. */
    public Admin getAdmin() {
        return admin;
    }

    /** The web settings. */
    public Web getWeb() {
        return web;
    }

    /** The watchdog settings. */
    public Watchdog getWatchdog() {
        return watchdog;
    }

    /** The shutdown settings. */
    public Shutdown getShutdown() {
        return shutdown;
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

    /** {@code dlock.watchdog.*}: the thread that renews watchdog-managed leases. */
    public static class Watchdog {

        /** The most leases renewed in one call to the store (1 to 10000). */
        private int batchSize = LockManager.DEFAULT_RENEWAL_BATCH_SIZE;

        /** The most leases renewed in one call to the store. */
        public int getBatchSize() {
            return batchSize;
        }

        /** Sets the renewal batch size. */
        public void setBatchSize(int batchSize) {
            this.batchSize = batchSize;
        }
    }

    /** {@code dlock.shutdown.*}: what the lock manager does when the application context closes. */
    public static class Shutdown {

        /**
         * How long the closing lock manager waits for critical sections still running to end by themselves (after the
         * web server drained and stopped), before it releases their locks in the store and reports them lost to their
         * holders; 0 frees them at once.
         */
        private Duration gracePeriod = LockManager.DEFAULT_SHUTDOWN_GRACE_PERIOD;

        /** The grace period of the closing lock manager. */
        public Duration getGracePeriod() {
            return gracePeriod;
        }

        /** Sets the grace period of the closing lock manager. */
        public void setGracePeriod(Duration gracePeriod) {
            this.gracePeriod = gracePeriod;
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

        /**
         * Whether dlock's counters and gauges are registered, and its timers described and given percentile histograms,
         * when a MeterRegistry exists. The timers themselves come from the observations (dlock.observation.enabled).
         */
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

    /** {@code dlock.observation.*}: Micrometer observations of lock waits and holds: trace spans, and dlock's timers. */
    public static class Observation {

        /**
         * Whether lock waits and holds are observed when an ObservationRegistry exists: spans, and, through the meter
         * observation handler, the dlock.lock.acquire and dlock.lock.hold timers and their long-task timers.
         */
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

    /** {@code dlock.admin.*}: what an operator may do to locks through the Actuator endpoint. */
    public static class Admin {

        private final ForceRelease forceRelease = new ForceRelease();

        /** The forced release settings. */
        public ForceRelease getForceRelease() {
            return forceRelease;
        }
    }

    /** {@code dlock.admin.force-release.*}: the endpoint's forced release ({@code DELETE /actuator/dlock/{name}?key=}). */
    public static class ForceRelease {

        /**
         * Whether DELETE /actuator/dlock/{name}?key=... frees a lock in the store whoever holds it. Deprecated: true is
         * read as management.endpoint.dlock.access=unrestricted when that property is not set.
         */
        private boolean enabled = false;

        /** Whether the endpoint may force a release; replaced by {@code management.endpoint.dlock.access}. */
        @Deprecated(since = "0.1.0", forRemoval = true)
        @DeprecatedConfigurationProperty(replacement = "management.endpoint.dlock.access", since = "0.1.0",
                reason = "Spring Boot's endpoint access: unrestricted allows the forced release, read-only (the endpoint's default) refuses it")
        public boolean isEnabled() {
            return enabled;
        }

        /** Allows or refuses the endpoint's forced release (mapped onto {@code management.endpoint.dlock.access}). */
        @Deprecated(since = "0.1.0", forRemoval = true)
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }
    }

    /** {@code dlock.web.*}: how a web application answers its clients about locks. */
    public static class Web {

        private final ProblemDetails problemDetails = new ProblemDetails();

        /** The answer to a lock that was not acquired. */
        public ProblemDetails getProblemDetails() {
            return problemDetails;
        }
    }

    /**
     * {@code dlock.web.problem-details.*}: a {@code LockNotAcquiredException} that reaches Spring MVC or WebFlux unhandled
     * answers 409 Conflict as an RFC 9457 problem detail naming the lock.
     */
    public static class ProblemDetails {

        /**
         * Whether a LockNotAcquiredException no handler of the application took answers 409 Conflict (application/problem+json,
         * naming the lock; Retry-After after a wait that timed out) instead of a 500; the application's own
         * exception handlers always come first.
         */
        private boolean enabled = true;

        /** Whether the problem detail also carries the lock key (off: keys may hold ids or personal data). */
        private boolean includeKey = false;

        /** Whether a busy lock answers 409 as a problem detail. */
        public boolean isEnabled() {
            return enabled;
        }

        /** Switches the 409 answer on or off. */
        public void setEnabled(boolean enabled) {
            this.enabled = enabled;
        }

        /** Whether the problem detail carries the lock key. */
        public boolean isIncludeKey() {
            return includeKey;
        }

        /** Puts the lock key in the problem detail, or keeps it out. */
        public void setIncludeKey(boolean includeKey) {
            this.includeKey = includeKey;
        }
    }

    /**
     * The lock stores the starter can configure. Each constant also carries its store module's description for the
     * auto-configuration (its classes, properties, auto-configuration and starter): adding a store is one constant here.
     * Without {@code dlock.store}, the first constant whose module is on the class path is the store.
     */
    public enum Store {
        /** Redis: standalone, Sentinel, Cluster or Redlock, from {@code dlock.redis.*} or {@code spring.data.redis.*}. */
        REDIS(new StoreModule("dlock-redis", RedisStoreProperties.PREFIX, RedisStoreProperties.class, false,
                "dev.dlock.boot.RedisLockStoreAutoConfiguration", "dev.dlock.redis.RedisLockBackend", "redis.clients.jedis.UnifiedJedis")),
        /** ZooKeeper through Curator, from {@code dlock.zookeeper.*} or the application's {@code CuratorFramework}. */
        ZOOKEEPER(new StoreModule("dlock-zookeeper", ZooKeeperStoreProperties.PREFIX, ZooKeeperStoreProperties.class, false,
                "dev.dlock.boot.ZooKeeperLockStoreAutoConfiguration", "dev.dlock.zookeeper.ZooKeeperLockBackend",
                "org.apache.curator.framework.CuratorFramework")),
        /** In this JVM's memory: locks exclude threads of this application instance only, never other instances. */
        IN_MEMORY(StoreModule.NONE),
        /** A relational database (PostgreSQL, MariaDB, H2) through the application's DataSource; see {@code dlock.jdbc.*}. */
        JDBC(new StoreModule("dlock-jdbc", JdbcStoreProperties.PREFIX, JdbcStoreProperties.class, true,
                "dev.dlock.boot.JdbcLockStoreAutoConfiguration", "dev.dlock.jdbc.JdbcLockBackend", "javax.sql.DataSource")),
        /** memcached, from {@code dlock.memcached.*}: efficiency only, an eviction or a restart drops a held lock silently. */
        MEMCACHED(new StoreModule("dlock-memcached", MemcachedStoreProperties.PREFIX, MemcachedStoreProperties.class, true,
                "dev.dlock.boot.MemcachedLockStoreAutoConfiguration", "dev.dlock.memcached.MemcachedLockBackend"));

        private final StoreModule module;

        Store(StoreModule module) {
            this.module = module;
        }

        /** The store's module, as the auto-configuration sees it. */
        StoreModule module() {
            return module;
        }

        /** The value of {@code dlock.store} that names this store: {@code redis}, {@code in-memory}... */
        String id() {
            return name().toLowerCase(Locale.ROOT).replace('_', '-');
        }
    }
}
