package dev.dlock.boottests;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An application whose traffic needs its lock store opts in with Boot's own property
 * ({@code management.endpoint.health.group.readiness.include=readinessState,dlock}): an instance whose lock
 * store is gone then reports "not ready" (503), so that a load balancer stops sending it calls that would all
 * fail on their lock, while liveness stays UP (a restart would not bring the store back). Without it, readiness
 * ignores the store ({@link ReadinessByDefaultTest}). The store is a redis-server this test starts, kills
 * (SIGKILL) and restarts.
 */
@SpringBootTest(webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "management.endpoint.health.probes.enabled=true",
        "management.endpoint.health.group.readiness.include=readinessState,dlock"})
class ReadinessTest extends ReadinessSupport {

    private static final RedisServerProcess REDIS = RedisServerProcess.start(StockApplicationTest.aclUser("dlockapp"));

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", REDIS::uri);
        registry.add("dlock.redis.password", () -> StockApplicationTest.PASSWORD);
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void readinessFollowsTheLockStoreOnceOptedInAndLivenessDoesNot() throws Exception {
        assertThat(status("/actuator/health/readiness")).as("readiness while Redis answers").isEqualTo(200);

        REDIS.kill();
        assertThat(status("/actuator/health/readiness")).as("readiness with the lock store gone").isEqualTo(503);
        assertThat(status("/actuator/health/liveness")).as("liveness with the lock store gone").isEqualTo(200);

        REDIS.restart();
        awaitStatus("/actuator/health/readiness", 200);
    }
}
