package dev.dlock.boot.keys;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.LockNotAcquiredException;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.aop.AopAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What the docs say about keys, on a real Redis: an annotated method's lock key is {@code <name>:<key>}, kept in Redis
 * as {@code dlock:{<name>:<key>}}; two methods exclude each other only when they share {@code name}, and the default
 * name is the method's own ({@code SimpleClassName.methodName}), so two methods without a name never exclude each other.
 */
class LockKeysTest {

    private static RedisServerProcess redis;

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(AopAutoConfiguration.class, RedisLockStoreAutoConfiguration.class,
                    DistributedLockAutoConfiguration.class))
            .withBean(Inventory.class);

    @BeforeAll
    static void startRedis() {
        redis = RedisServerProcess.start();
    }

    @AfterAll
    static void stopRedis() {
        redis.close();
    }

    /** Methods that lock one SKU. */
    public static class Inventory {

        /** Runs {@code body} while holding {@code inventory:<sku>}. */
        @DistributedLock(name = "inventory", key = "#sku")
        public <T> T reserve(String sku, Supplier<T> body) {
            return body.get();
        }

        /** The same name: excluded while {@link #reserve} holds the SKU. */
        @DistributedLock(name = "inventory", key = "#sku", waitTime = "0")
        public String restock(String sku) {
            return "restocked";
        }

        /** No name: its own lock, {@code Inventory.audit:<sku>}. */
        @DistributedLock(key = "#sku", waitTime = "0")
        public String audit(String sku) {
            return "audited";
        }

        /** No name either: {@code Inventory.count:<sku>}, not {@link #audit}'s. */
        @DistributedLock(key = "#sku", waitTime = "0")
        public <T> T count(String sku, Supplier<T> body) {
            return body.get();
        }
    }

    @Test
    void theRedisKeyIsThePrefixAndTheNameAndKeyInOneHashTag() {
        runner.withPropertyValues("dlock.store=redis", "dlock.redis.url=" + redis.uri()).run(context -> {
            Inventory inventory = context.getBean(Inventory.class);
            boolean[] seen = new boolean[2];
            inventory.reserve("sku-42", () -> {
                try (redis.clients.jedis.Jedis admin = redis.admin()) {
                    seen[0] = admin.exists("dlock:{inventory:sku-42}");
                    seen[1] = admin.exists("dlock:inventory:sku-42");
                }
                return null;
            });
            assertThat(seen[0]).as("dlock:{inventory:sku-42} while held").isTrue();
            assertThat(seen[1]).as("dlock:inventory:sku-42 while held").isFalse();
        });
    }

    @Test
    void methodsExcludeEachOtherOnlyWhenTheyShareTheName() {
        runner.withPropertyValues("dlock.store=redis", "dlock.redis.url=" + redis.uri()).run(context -> {
            Inventory inventory = context.getBean(Inventory.class);
            inventory.reserve("sku-7", () -> {
                assertThatThrownBy(() -> CompletableFuture.supplyAsync(() -> inventory.restock("sku-7")).join())
                        .as("restock, same name, same SKU, from another thread").isInstanceOf(CompletionException.class)
                        .hasCauseInstanceOf(LockNotAcquiredException.class);
                assertThat(CompletableFuture.supplyAsync(() -> inventory.audit("sku-7")).join())
                        .as("audit, default name, same SKU, from another thread").isEqualTo("audited");
                return null;
            });
            inventory.count("sku-7", () -> {
                assertThat(CompletableFuture.supplyAsync(() -> inventory.audit("sku-7")).join())
                        .as("two methods without a name, one SKU").isEqualTo("audited");
                return null;
            });
        });
    }
}
