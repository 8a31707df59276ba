package dev.dlock.boot;

import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.ssl.SslBundle;

import redis.clients.jedis.HostAndPort;

import java.time.Duration;
import java.util.List;

/**
 * Reads the application's Redis connection details (Spring Boot 4: {@code DataRedisConnectionDetails},
 * from Testcontainers' {@code @ServiceConnection}, Docker Compose, cloud bindings or the application) into
 * dlock's settings. Touched only when that class is on the class path.
 */
final class RedisConnectionDetailsReader {

    /** The connection details type of this Spring Boot line. */
    static final String DETAILS_CLASS = "org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails";

    private RedisConnectionDetailsReader() {
    }

    /** The settings from the one connection details bean that is not Boot's own view of spring.data.redis.*; null when none. */
    static RedisConnectionSettings read(ListableBeanFactory beans, Duration connectTimeout, Duration readTimeout) {
        String name = ConnectionDetailsBeans.single(beans, DataRedisConnectionDetails.class);
        if (name == null) {
            return null;
        }
        DataRedisConnectionDetails details = beans.getBean(name, DataRedisConnectionDetails.class);
        String source = ConnectionDetailsBeans.describe(name, details);
        SslBundle ssl = details.getSslBundle();
        DataRedisConnectionDetails.Sentinel sentinel = details.getSentinel();
        if (sentinel != null) {
            return new RedisConnectionSettings(source, RedisConnectionSettings.Mode.SENTINEL, nodes(sentinel.getNodes()),
                    sentinel.getMaster(), details.getUsername(), details.getPassword(), sentinel.getDatabase(), ssl != null,
                    connectTimeout, readTimeout, sentinel.getUsername(), sentinel.getPassword(), null, ssl, true);
        }
        DataRedisConnectionDetails.Cluster cluster = details.getCluster();
        if (cluster != null) {
            return new RedisConnectionSettings(source, RedisConnectionSettings.Mode.CLUSTER, nodes(cluster.getNodes()),
                    null, details.getUsername(), details.getPassword(), 0, ssl != null,
                    connectTimeout, readTimeout, null, null, null, ssl, true);
        }
        DataRedisConnectionDetails.Standalone standalone = details.getStandalone();
        if (standalone == null) {
            throw new IllegalStateException(source + " describes neither a standalone server, Sentinel nor a Cluster; "
                    + "dlock cannot lock through it (set dlock.redis.url, or name a dlock client bean "
                    + DlockRedisClient.BEAN_NAME + ")");
        }
        return new RedisConnectionSettings(source, RedisConnectionSettings.Mode.STANDALONE,
                List.of(new HostAndPort(standalone.getHost(), standalone.getPort())), null,
                details.getUsername(), details.getPassword(), standalone.getDatabase(), ssl != null,
                connectTimeout, readTimeout, null, null, null, ssl, true);
    }

    private static List<HostAndPort> nodes(List<DataRedisConnectionDetails.Node> nodes) {
        return nodes.stream().map(node -> new HostAndPort(node.host(), node.port())).toList();
    }
}
