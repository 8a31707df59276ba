package dev.dlock.boottests;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.data.redis.autoconfigure.DataRedisConnectionDetails;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.context.annotation.Bean;

import redis.clients.jedis.Jedis;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application whose only Redis configuration is a connection details bean (what Testcontainers'
 * {@code @ServiceConnection} or Docker Compose give on Spring Boot 4): dlock locks in that Redis, as
 * the ACL user and with the password the details carry.
 */
@SpringBootTest(classes = {StockApplication.class, ConnectionDetailsApplicationTest.Details.class},
        webEnvironment = SpringBootTest.WebEnvironment.NONE,
        // No application.yml: nothing but the connection details bean says where Redis is.
        properties = "spring.config.name=no-application-yml")
class ConnectionDetailsApplicationTest {

    private static final RedisServerProcess REDIS = RedisServerProcess.start(StockApplicationTest.aclUser("detailsuser"));

    @Autowired
    private LockManager lockManager;

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void locksInTheRedisTheConnectionDetailsName() {
        try (LockHandle lock = lockManager.acquire("details-key", Duration.ZERO); Jedis admin = REDIS.admin()) {
            assertThat(admin.exists("dlock:{details-key}")).as("lock key in the connection details' Redis").isTrue();
            assertThat(lock.fencingToken()).isPositive();
        }
    }

    /** The connection details, as a service-connection factory would contribute them. */
    @TestConfiguration(proxyBeanMethods = false)
    static class Details {
        @Bean
        DataRedisConnectionDetails redisConnectionDetails() {
            return new DataRedisConnectionDetails() {
                @Override
                public String getUsername() {
                    return "detailsuser";
                }

                @Override
                public String getPassword() {
                    return StockApplicationTest.PASSWORD;
                }

                @Override
                public Standalone getStandalone() {
                    return Standalone.of(REDIS.host(), REDIS.port());
                }
            };
        }
    }
}
