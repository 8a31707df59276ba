package dev.dlock.boot;

import org.springframework.boot.context.properties.ConfigurationProperties;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * The {@code dlock.redis.*} settings of the Redis store ({@code dlock.store=redis}): where the locks live.
 * When none of url, sentinel, cluster and redlock is set, the application's Redis connection details or the
 * {@code spring.data.redis.*} settings are used instead. Plain values; the rules live in
 * {@link RedisConnectionSettings} and the store's builder.
 */
@ConfigurationProperties(RedisStoreProperties.PREFIX)
public class RedisStoreProperties {

    /** The prefix of the Redis store's properties. */
    public static final String PREFIX = DistributedLockProperties.PREFIX + ".redis";

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
}
