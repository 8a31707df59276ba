package dev.dlock.boottests;

import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import redis.clients.jedis.HostAndPort;

import java.util.List;

/** Sentinel and Cluster from Spring Boot 4's {@code DataRedisConnectionDetails}. */
class ConnectionDetailsTopologyTest extends ConnectionDetailsTopologyContract {

    @Override
    protected ApplicationContextRunner withSentinelDetails(ApplicationContextRunner runner, String master,
                                                           List<HostAndPort> sentinels) {
        DataRedisConnectionDetails.Sentinel sentinel = new DataRedisConnectionDetails.Sentinel() {
            @Override
            public int getDatabase() {
                return SENTINEL_DATABASE;
            }

            @Override
            public String getMaster() {
                return master;
            }

            @Override
            public List<DataRedisConnectionDetails.Node> getNodes() {
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
        return runner.withBean(DataRedisConnectionDetails.class, () -> new DataRedisConnectionDetails() {
            @Override
            public Sentinel getSentinel() {
                return sentinel;
            }
        });
    }

    @Override
    protected ApplicationContextRunner withClusterDetails(ApplicationContextRunner runner, List<HostAndPort> seeds) {
        return runner.withBean(DataRedisConnectionDetails.class, () -> new DataRedisConnectionDetails() {
            @Override
            public Cluster getCluster() {
                return () -> nodes(seeds);
            }
        });
    }

    private static List<DataRedisConnectionDetails.Node> nodes(List<HostAndPort> addresses) {
        return addresses.stream().map(a -> new DataRedisConnectionDetails.Node(a.getHost(), a.getPort())).toList();
    }
}
