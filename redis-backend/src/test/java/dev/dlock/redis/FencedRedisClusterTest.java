package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import dev.dlock.core.StaleFencingTokenException;
import dev.dlock.testkit.redis.RedisClusterSetup;
import dev.dlock.testkit.redis.RedisServerProcess;

import redis.clients.jedis.RedisClusterClient;

/** {@link FencedRedis} on a three-master cluster: the value and its token always share a slot (no CROSSSLOT), on every master. */
class FencedRedisClusterTest {

    private static RedisClusterSetup cluster;
    private static RedisClusterClient client;

    @BeforeAll
    static void startCluster() {
        cluster = RedisClusterSetup.start(3, 0);
        client = TopologyBackendFactory.clusterClient(cluster.seeds(), 3, Duration.ofSeconds(3));
    }

    @AfterAll
    static void stopCluster() throws Exception {
        RedisTestSupport.closeAll(client, cluster);
    }

    @Test
    void fencedWritesWithAndWithoutAHashTagWorkOnEveryMaster() {
        FencedRedis fenced = new FencedRedis(client);
        for (RedisServerProcess master : cluster.initialMasters()) {
            String plain = RedisTestSupport.keyOwnedBy(cluster, master, "stock:");
            String tagged = "order:{" + plain + "}:lines";
            fenced.set(plain, "10", 5);
            fenced.hset(tagged, "line-1", "2 items", 5);
            fenced.rpush(tagged + ":journal", "shipped", 5);
            assertThatThrownBy(() -> fenced.set(plain, "stale", 4)).isInstanceOf(StaleFencingTokenException.class);
            assertThatThrownBy(() -> fenced.hset(tagged, "line-1", "stale", 4)).isInstanceOf(StaleFencingTokenException.class);
            assertThat(client.get(plain)).isEqualTo("10");
            assertThat(client.hget(tagged, "line-1")).isEqualTo("2 items");
            assertThat(fenced.acceptedToken(tagged + ":journal")).hasValue(5);
        }
    }
}
