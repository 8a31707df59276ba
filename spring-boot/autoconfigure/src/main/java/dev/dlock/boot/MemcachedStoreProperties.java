package dev.dlock.boot;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import dev.dlock.memcached.MemcachedLockBackend;
import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * The {@code dlock.memcached.*} settings of the memcached lock store ({@code dlock.store=memcached}), which is
 * efficiency only: an eviction or a restart drops a held lock silently, and it issues no fencing tokens. Plain
 * values; the rules live in {@link MemcachedLockBackend.Builder}.
 */
@ConfigurationProperties(MemcachedStoreProperties.PREFIX)
public class MemcachedStoreProperties {

    /** The prefix of the memcached store's properties. */
    public static final String PREFIX = DistributedLockProperties.PREFIX + ".memcached";

    /** The servers, host[:port] (port 11211 when left out); several share the keys, and every JVM must list the same. */
    private List<String> servers = new ArrayList<>();

    /** The timeout of connecting and of every exchange with a server (100ms to 60s). */
    private Duration timeout = MemcachedLockBackend.DEFAULT_TIMEOUT;

    /** The most connections to each server (1 to 256). */
    private int poolSize = MemcachedLockBackend.DEFAULT_POOL_SIZE;

    /** What every memcached key of the store starts with (at most 64 bytes). */
    private String keyPrefix = MemcachedLockBackend.DEFAULT_KEY_PREFIX;

    /** The servers. */
    public List<String> getServers() {
        return servers;
    }

    /** Sets the servers, host[:port] each. */
    public void setServers(List<String> servers) {
        this.servers = servers;
    }

    /** The timeout of every exchange. */
    public Duration getTimeout() {
        return timeout;
    }

    /** Sets the timeout of every exchange. */
    public void setTimeout(Duration timeout) {
        this.timeout = timeout;
    }

    /** The most connections to each server. */
    public int getPoolSize() {
        return poolSize;
    }

    /** Sets the most connections to each server. */
    public void setPoolSize(int poolSize) {
        this.poolSize = poolSize;
    }

    /** The key prefix. */
    public String getKeyPrefix() {
        return keyPrefix;
    }

    /** Sets the key prefix. */
    public void setKeyPrefix(String keyPrefix) {
        this.keyPrefix = keyPrefix;
    }
}
