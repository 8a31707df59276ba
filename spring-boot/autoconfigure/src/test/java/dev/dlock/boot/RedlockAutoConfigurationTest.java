package dev.dlock.boot;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.redis.RedlockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.UnifiedJedis;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** {@code dlock.redis.redlock.nodes}: the Redlock store over independent masters, each a real redis-server. */
class RedlockAutoConfigurationTest {

    private static final List<RedisServerProcess> masters = new ArrayList<>();

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(RedisLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class));

    @BeforeAll
    static void startMasters() {
        for (int i = 0; i < 3; i++) {
            masters.add(RedisServerProcess.start());
        }
    }

    @AfterAll
    static void stopMasters() {
        masters.forEach(RedisServerProcess::close);
    }

    private static String nodes(int count) {
        return "dlock.redis.redlock.nodes=" + masters.stream().limit(count).map(RedisServerProcess::uri).collect(Collectors.joining(","));
    }

    @Test
    void redlockNodesMakeARedlockStoreThatLocksOnAQuorumOfTheMasters() {
        runner.withPropertyValues(nodes(3), "dlock.redis.key-prefix=rl:").run(context -> {
            assertThat(context).hasNotFailed()
                    .hasSingleBean(RedlockBackend.class)
                    .doesNotHaveBean(RedisLockBackend.class)
                    .doesNotHaveBean(UnifiedJedis.class)
                    .hasSingleBean(RedlockClients.class);
            assertThat(context.getBean(LockBackend.class)).isInstanceOf(RedlockBackend.class);
            try (LockHandle lock = context.getBean(LockManager.class).acquire("order-7", Duration.ZERO)) {
                // Redlock's promise is a quorum: the third master's grant may land later, or time out on a loaded
                // machine (it was seen missing 5 s later beside another build).
                assertThat(mastersHolding("rl:{order-7}")).as("masters holding the key").isGreaterThanOrEqualTo(2);
                assertThat(lock.fencingToken()).isPositive();
            }
        });
    }

    private static int mastersHolding(String redisKey) {
        int holding = 0;
        for (RedisServerProcess master : masters) {
            try (Jedis admin = master.admin()) {
                holding += admin.exists(redisKey) ? 1 : 0;
            }
        }
        return holding;
    }

    @Test
    void fewerThanThreeMastersFailStartupNamingTheProperty() {
        runner.withPropertyValues(nodes(2)).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains("dlock.redis.redlock.nodes").contains("at least 3");
        });
    }

    @Test
    void redlockCannotBeCombinedWithAnotherConnection() {
        runner.withPropertyValues(nodes(3), "dlock.redis.url=" + masters.get(0).uri()).run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains("dlock.redis.redlock.nodes cannot be combined");
        });
    }

    @Test
    void aNodeThatIsNotARedisUrlFailsStartupNamingTheProperty() {
        runner.withPropertyValues("dlock.redis.redlock.nodes=redis://a:1,http://b:2,redis://c:3").run(context -> {
            assertThat(context).hasFailed();
            assertThat(messages(context.getStartupFailure())).contains("dlock.redis.redlock.nodes");
        });
    }

    private static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            all.append(t.getMessage()).append('\n');
        }
        return all.toString();
    }
}
