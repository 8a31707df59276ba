package dev.dlock.boottests.storedown;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The web application on Redis; the store goes down as its redis-server process is killed. */
@SpringBootTest(classes = OrderApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = "dlock.store=redis")
@DirtiesContext
class RedisDownWebTest extends StoreDownWebContract {

    private static final RedisServerProcess REDIS = RedisServerProcess.start();

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
    }

    @AfterAll
    static void closeRedis() {
        REDIS.close();
    }

    @Override
    void stopStore() {
        REDIS.kill();
    }
}
