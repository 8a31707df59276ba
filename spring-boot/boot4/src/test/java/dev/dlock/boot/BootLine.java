package dev.dlock.boot;

import dev.dlock.boot.actuate.LockStoreHealthIndicator;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.boot.micrometer.metrics.autoconfigure.CompositeMeterRegistryAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.MetricsAutoConfiguration;
import org.springframework.boot.micrometer.metrics.autoconfigure.export.simple.SimpleMetricsExportAutoConfiguration;
import org.springframework.boot.micrometer.observation.autoconfigure.ObservationAutoConfiguration;
import org.springframework.boot.web.server.context.WebServerGracefulShutdownLifecycle;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.util.Map;

/**
 * The Boot 4 types the shared tests (spring-boot/autoconfigure/src/test) use, which Boot 4 moved: this file on the
 * Boot 4 line, its twin in spring-boot/boot3/src/test/java on the Boot 3.5 line.
 */
public final class BootLine {

    /** Boot's Micrometer auto-configurations that give a context a simple MeterRegistry. */
    public static final AutoConfigurations METRICS = AutoConfigurations.of(MetricsAutoConfiguration.class,
            CompositeMeterRegistryAutoConfiguration.class, SimpleMetricsExportAutoConfiguration.class);

    /**
     * Boot's observation auto-configuration: the ObservationRegistry, with the meter observation handler when
     * {@link #METRICS} gives a MeterRegistry, and every ObservationHandler bean.
     */
    public static final AutoConfigurations OBSERVATION = AutoConfigurations.of(ObservationAutoConfiguration.class);

    /**
     * The phase of Boot's graceful web shutdown (requests drain while it stops); the web server itself stops 1024
     * phases later, in the next phase below.
     */
    public static final int GRACEFUL_SHUTDOWN_PHASE = WebServerGracefulShutdownLifecycle.SMART_LIFECYCLE_PHASE;

    /** The health indicator type whose absence means "no health support on the class path". */
    public static final Class<?> HEALTH_INDICATOR = HealthIndicator.class;

    /** The Redis store starter of this Boot line, which dlock names when no store module is present. */
    public static final String REDIS_STARTER = "dlock-redis-spring-boot-starter";

    private BootLine() {
    }

    /** The status code of the store's health ({@code UP}, {@code DOWN}). */
    public static String status(LockStoreHealthIndicator indicator) {
        return indicator.health().getStatus().getCode();
    }

    /** A new client of the Redis at {@code host:port} (Jedis 7's RedisClient); the caller closes it. */
    public static UnifiedJedis redisClient(String host, int port) {
        return RedisClient.create(host, port);
    }

    /** The details of the store's health. */
    public static Map<String, Object> details(LockStoreHealthIndicator indicator) {
        return indicator.health().getDetails();
    }
}
