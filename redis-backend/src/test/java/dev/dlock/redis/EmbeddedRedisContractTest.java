package dev.dlock.redis;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.BeforeAll;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

/**
 * The same contract against the Redis 6.2 binary that arrives through Maven (embedded-redis): what a
 * machine without {@code redis-server} on its PATH runs, and the oldest Redis the scripts must work on. Skipped
 * where {@link RedisLockManagerContractTest} runs on that binary already (no {@code redis-server} on the PATH).
 */
class EmbeddedRedisContractTest extends RedisLockManagerContractTest {

    @BeforeAll
    static void startRedis() {
        assumeFalse(RedisServerProcess.startsEmbedded(), "RedisLockManagerContractTest runs this contract on the embedded Redis 6.2 here");
        redis = RedisServerProcess.startEmbedded();
        assertThat(redis.version()).startsWith("6.2");
    }
}
