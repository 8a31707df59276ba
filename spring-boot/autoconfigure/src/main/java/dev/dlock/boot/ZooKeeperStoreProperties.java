package dev.dlock.boot;

import java.time.Duration;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * {@code dlock.zookeeper.*}: the ZooKeeper store, for {@code dlock.store=zookeeper}. The connection
 * settings are used only when the application has no {@code CuratorFramework} bean of its own.
 */
@ConfigurationProperties(prefix = ZooKeeperStoreProperties.PREFIX)
public class ZooKeeperStoreProperties {

    /** The prefix of these properties. */
    public static final String PREFIX = DistributedLockProperties.PREFIX + ".zookeeper";

    /** The ensemble, host:port[,host:port...][/chroot]. */
    private String connectString;

    /** How long the ensemble keeps the session, and with it every lock, after the last heartbeat. */
    private Duration sessionTimeout = Duration.ofSeconds(30);

    /** How long connecting may take; also the longest dlock.verify-on-start waits for the ensemble at startup. */
    private Duration connectionTimeout = Duration.ofSeconds(10);

    /** The node under which each key gets a node of its own. */
    private String basePath = "/dlock";

    /** The ensemble to connect to. */
    public String getConnectString() {
        return connectString;
    }

    /** Sets the ensemble, host:port[,host:port...][/chroot]. */
    public void setConnectString(String connectString) {
        this.connectString = connectString;
    }

    /** The session timeout. */
    public Duration getSessionTimeout() {
        return sessionTimeout;
    }

    /** Sets the session timeout. */
    public void setSessionTimeout(Duration sessionTimeout) {
        this.sessionTimeout = sessionTimeout;
    }

    /** The connection timeout. */
    public Duration getConnectionTimeout() {
        return connectionTimeout;
    }

    /** Sets the connection timeout. */
    public void setConnectionTimeout(Duration connectionTimeout) {
        this.connectionTimeout = connectionTimeout;
    }

    /** The base path of the lock nodes. */
    public String getBasePath() {
        return basePath;
    }

    /** Sets the base path of the lock nodes. */
    public void setBasePath(String basePath) {
        this.basePath = basePath;
    }
}
