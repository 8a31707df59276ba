package dev.dlock.boot;

import static dev.dlock.boot.BuilderProperty.set;

import java.time.Duration;
import java.util.concurrent.TimeUnit;

import dev.dlock.boot.DistributedLockProperties.Store;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.zookeeper.ZooKeeperLockBackend;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.retry.ExponentialBackoffRetry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;

/**
 * The ZooKeeper lock store for {@code dlock.store=zookeeper}: over the application's
 * {@link CuratorFramework} when it has one, otherwise over a client of its own from
 * {@code dlock.zookeeper.*}. Runs before the store-neutral {@link DistributedLockAutoConfiguration}, whose
 * {@code dlock.verify-on-start} has this configuration's check wait for a connection at startup.
 */
@AutoConfiguration(before = DistributedLockAutoConfiguration.class)
@ConditionalOnClass({ZooKeeperLockBackend.class, CuratorFramework.class})
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".enabled", matchIfMissing = true)
@ConditionalOnLockStore(Store.ZOOKEEPER)
@EnableConfigurationProperties(ZooKeeperStoreProperties.class)
public class ZooKeeperLockStoreAutoConfiguration {

    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockStoreAutoConfiguration.class);
    private static final String CONNECT_STRING = ZooKeeperStoreProperties.PREFIX + ".connect-string";
    private static final String CONNECTION_TIMEOUT = ZooKeeperStoreProperties.PREFIX + ".connection-timeout";
    private static final String CLIENT_BEAN_NAME = "dlockCuratorFramework";
    private static final String BACKEND_BEAN_NAME = "dlockZooKeeperLockBackend";

    /** A Curator client from {@code dlock.zookeeper.*}, started here and closed with the context. */
    @Bean(name = CLIENT_BEAN_NAME, destroyMethod = "close")
    @ConditionalOnMissingBean(CuratorFramework.class)
    public CuratorFramework dlockCuratorFramework(ZooKeeperStoreProperties properties) {
        String connectString = properties.getConnectString();
        if (connectString == null || connectString.isBlank()) {
            throw new DistributedLockStartupException(CONNECT_STRING + " is not set: dlock.store=zookeeper needs the ensemble",
                    "Set " + CONNECT_STRING + " to host:port[,host:port...], or define a CuratorFramework bean.", null);
        }
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(connectString)
                .sessionTimeoutMs(positiveMillis(ZooKeeperStoreProperties.PREFIX + ".session-timeout", properties.getSessionTimeout()))
                .connectionTimeoutMs(positiveMillis(CONNECTION_TIMEOUT, properties.getConnectionTimeout()))
                .retryPolicy(new ExponentialBackoffRetry(100, 5))
                .build();
        client.start();
        return client;
    }

    /** The ZooKeeper lock store over the application's (or the auto-configured) client; the client is not closed by it. */
    @Bean(name = BACKEND_BEAN_NAME, destroyMethod = "close")
    @ConditionalOnMissingBean(LockBackend.class)
    public ZooKeeperLockBackend dlockZooKeeperLockBackend(CuratorFramework client, ZooKeeperStoreProperties properties) {
        ZooKeeperLockBackend.Builder builder = ZooKeeperLockBackend.builder(client);
        set(ZooKeeperStoreProperties.PREFIX + ".base-path", () -> builder.basePath(properties.getBasePath()));
        ZooKeeperLockBackend backend = builder.build();
        // Also over the application's own client; a connect string holds hosts and a chroot, never credentials.
        log.info("dlock locks in ZooKeeper {} under {}", client.getZookeeperClient().getCurrentConnectionString(),
                properties.getBasePath());
        return backend;
    }

    /**
     * dlock.verify-on-start for the ZooKeeper store: a connection within {@code dlock.zookeeper.connection-timeout}
     * (rather than the first lock waiting out Curator's retries), then one read; failing with the connect string
     * to fix, or the application's client when dlock locks with that.
     */
    @Bean
    StoreStartupCheck dlockZooKeeperStartupCheck(ObjectProvider<CuratorFramework> clients, ZooKeeperStoreProperties properties,
                                                 ListableBeanFactory beans) {
        return backend -> {
            // Only this configuration's store is known to run over the CuratorFramework bean; others are pinged as they are.
            if (!StoreStartupCheck.isBean(beans, BACKEND_BEAN_NAME, backend)) {
                return false;
            }
            CuratorFramework client = clients.getObject();
            String ensemble = client.getZookeeperClient().getCurrentConnectionString();
            String fix = beans.containsBean(CLIENT_BEAN_NAME)
                    ? "Check " + CONNECT_STRING + ": a ZooKeeper ensemble must answer there."
                    : "Check the application's CuratorFramework bean, which dlock locks with: a ZooKeeper ensemble must answer at "
                    + "its connect string.";
            int timeoutMillis = positiveMillis(CONNECTION_TIMEOUT, properties.getConnectionTimeout());
            if (!connected(client, timeoutMillis)) {
                throw StoreStartupCheck.failed("dlock cannot use ZooKeeper at " + ensemble + ": no connection within "
                        + BuilderProperty.asWritten(Duration.ofMillis(timeoutMillis)) + " (" + CONNECTION_TIMEOUT + ")", fix, null);
            }
            StoreStartupCheck.ping(backend, e -> StoreStartupCheck.failed("dlock cannot use ZooKeeper at " + ensemble + ": "
                    + e.getMessage(), fix, e));
            return true;
        };
    }

    private static boolean connected(CuratorFramework client, int timeoutMillis) {
        try {
            return client.blockUntilConnected(timeoutMillis, TimeUnit.MILLISECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return false;
        }
    }

    private static int positiveMillis(String property, Duration duration) {
        if (duration == null || duration.isNegative() || duration.isZero() || duration.toMillis() > Integer.MAX_VALUE) {
            throw DistributedLockStartupException.invalid(property, "must be a positive duration, was "
                    + (duration == null ? "nothing" : BuilderProperty.asWritten(duration)), null);
        }
        return (int) duration.toMillis();
    }
}
