package dev.dlock.boottests;

import org.springframework.boot.autoconfigure.data.redis.RedisConnectionDetails;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import redis.clients.jedis.HostAndPort;

import java.util.List;

/** Sentinel and Cluster from Spring Boot 3.5's {@code RedisConnectionDetails}. */
class ConnectionDetailsTopologyTest extends ConnectionDetailsTopologyContract {

    @Override
    protected ApplicationContextRunner withSentinelDetails(ApplicationContextRunner runner, String master,
                                                           List<HostAndPort> sentinels) {
        RedisConnectionDetails.Sentinel sentinel = new RedisConnectionDetails.Sentinel() {
            @Override
            public int getDatabase() {
                return SENTINEL_DATABASE;
            }

            @Override
            public String getMaster() {
                return master;
            }

            @Override
            public List<RedisConnectionDetails.Node> getNodes() {
                return nodes(sentinels);
            }

            @Override
            public String getUsername() {
                return null;
            }

            @Override
            public String getPassword() {
                return null;
            }
        };
        return runner.withBean(RedisConnectionDetails.class, () -> new RedisConnectionDetails() {
            @Override
            public Sentinel getSentinel() {
                return sentinel;
            }
        });
    }

    @Override
    protected ApplicationContextRunner withClusterDetails(ApplicationContextRunner runner, List<HostAndPort> seeds) {
        return runner.withBean(RedisConnectionDetails.class, () -> new RedisConnectionDetails() {
            @Override
            public Cluster getCluster() {
                return () -> nodes(seeds);
            }
        });
    }

    private static List<RedisConnectionDetails.Node> nodes(List<HostAndPort> addresses) {
        return addresses.stream().map(a -> new RedisConnectionDetails.Node(a.getHost(), a.getPort())).toList();
    }
}
