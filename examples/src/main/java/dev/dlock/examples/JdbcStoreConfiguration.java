package dev.dlock.examples;

import java.net.URI;

import com.zaxxer.hikari.HikariDataSource;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

/**
 * With {@code dlock.store=jdbc} the locks live in the database of {@code spring.datasource.*}
 * (PostgreSQL, MariaDB or H2) while the stock and the ledger stay in the Redis of
 * {@code dlock.redis.url}: the service's code does not change, only where its locks are kept.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnProperty(name = "dlock.store", havingValue = "jdbc")
public class JdbcStoreConfiguration {

    /** The pool the JDBC lock store uses. */
    @Bean(destroyMethod = "close")
    public HikariDataSource dataSource(@Value("${spring.datasource.url}") String url,
                                       @Value("${spring.datasource.username:}") String username,
                                       @Value("${spring.datasource.password:}") String password) {
        HikariDataSource dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(url);
        dataSource.setUsername(username);
        dataSource.setPassword(password);
        dataSource.setConnectionTimeout(2_000);
        return dataSource;
    }

    /** The Redis holding the stock and the ledger (the dlock starter creates no Redis client for a JDBC store). */
    @Bean(destroyMethod = "close")
    public UnifiedJedis stockRedis(@Value("${dlock.redis.url}") String url) {
        URI uri = URI.create(url);
        return RedisClient.builder().hostAndPort(new HostAndPort(uri.getHost(), uri.getPort())).build();
    }
}
