package dev.dlock.aot;

import dev.dlock.boot.DlockRedisClient;
import dev.dlock.redis.FencedRedis;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.context.annotation.Bean;
import redis.clients.jedis.UnifiedJedis;

/** The application {@code spring-boot:process-aot} processes: one locked service, a fenced write, the endpoint. */
@SpringBootApplication
public class AotApplication {

    /** Writes fenced through the client dlock locks with. */
    @Bean
    FencedRedis fencedRedis(@DlockRedisClient UnifiedJedis client) {
        return new FencedRedis(client);
    }

    /** Starts the application. */
    public static void main(String[] args) {
        SpringApplication.run(AotApplication.class, args);
    }
}
