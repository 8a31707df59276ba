package dev.dlock.examples;

import com.zaxxer.hikari.HikariDataSource;
import dev.dlock.examples.demo.FlashSaleDemo;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.jdbc.PostgresServer;
import dev.dlock.testkit.ChildJvm;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The demo's flow with the locks in PostgreSQL: two service instances, each its own JVM, started
 * with {@code --dlock.store=jdbc} and the database's URL, sell 30 items to 300 concurrent purchases
 * (the stock stays in Redis, as with the Redis store). The service's code is the same.
 */
class FlashSalePostgresTest {

    @Test
    void twoInstancesLockingInPostgresqlNeverOversell() throws Exception {
        try (PostgresServer postgres = PostgresServer.start()) {
            HikariDataSource schema = new HikariDataSource();
            schema.setJdbcUrl(postgres.jdbcUrl());
            schema.setUsername("postgres");
            try (schema) {
                // The DDL a migration tool would apply once, before the instances start.
                JdbcLockBackend.builder(schema).createSchema(true).cleanupInterval(java.time.Duration.ZERO).build().close();
            }
            List<String> instance = ChildJvm.command(FlashSaleApplication.class,
                    "--dlock.store=jdbc",
                    "--spring.datasource.url=" + postgres.jdbcUrl(), "--spring.datasource.username=postgres");
            FlashSaleDemo.Options options = new FlashSaleDemo.Options(300, 30, 32, 2, "sku-pg", null, instance, System.out);
            FlashSaleDemo.Summary summary;
            try (FlashSaleDemo demo = new FlashSaleDemo(options)) {
                summary = demo.execute();
            }
            assertThat(summary.ports()).hasSize(2);
            assertThat(summary.oversold()).as("oversold").isZero();
            assertThat(summary.sold()).as("sold = stock").isEqualTo(30);
            assertThat(summary.remaining()).isZero();
            assertThat(summary.errors()).as("errors").isZero();
            assertThat(summary.ledgerEntries()).isEqualTo(30);
            assertThat(summary.fencingTokensIncreasing()).isTrue();
            assertThat(summary.sold() + summary.soldOut() + summary.aborted() + summary.rejected()).isEqualTo(300);
        }
    }
}
