package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.testkit.redis.RedisServerExtension;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.Response;

/** The Jedis version check runs once, not on the hot path: every coalesced batch opens a pipeline. */
class JedisGenerationTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void openingPipelinesReadsTheJedisManifestNoMoreThanOnce() {
        JedisGeneration.requireSupported();
        int readsBefore = JedisGeneration.manifestReads();
        try (RedisClient client = RedisTestSupport.client(redis.server())) {
            for (int i = 0; i < 100; i++) {
                try (AbstractPipeline pipeline = JedisGeneration.pipelined(client)) {
                    Response<String> answer = pipeline.set("generation:" + i, "x");
                    pipeline.sync();
                    assertThat(answer.get()).isEqualTo("OK");
                }
            }
        }
        assertThat(JedisGeneration.manifestReads()).as("manifest reads while 100 pipelines were opened").isEqualTo(readsBefore);
        assertThat(readsBefore).as("manifest reads in all").isLessThanOrEqualTo(1);
    }
}
