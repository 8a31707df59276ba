package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.Map;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import dev.dlock.core.LockManager;
import dev.dlock.core.StaleFencingTokenException;
import dev.dlock.testkit.PausedHolder;
import dev.dlock.testkit.redis.RedisServerExtension;

import redis.clients.jedis.Jedis;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.util.JedisClusterCRC16;

/** {@link FencedRedis}: a holder paused past its lease cannot overwrite the next holder's write. */
class FencedRedisTest {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    @Test
    void aHolderPausedPastItsLeaseIsRefusedAndTheNewerHoldersValueStays() throws Exception {
        try (RedisClient firstClient = RedisTestSupport.client(redis.server());
             RedisClient secondClient = RedisTestSupport.client(redis.server());
             LockManager first = LockManager.builder(RedisLockBackend.builder(firstClient).build()).build();
             LockManager second = LockManager.builder(RedisLockBackend.builder(secondClient).build()).build()) {
            FencedRedis firstGuard = new FencedRedis(firstClient);
            FencedRedis secondGuard = new FencedRedis(secondClient);

            PausedHolder.Outcome outcome = PausedHolder.run(first, second, "stock:42", Duration.ofMillis(200),
                    token -> firstGuard.set("stock:42", "written by the paused holder", token),
                    token -> secondGuard.set("stock:42", "written by the newer holder", token));

            assertThat(outcome.newerToken()).isGreaterThan(outcome.pausedToken());
            assertThat(outcome.pausedWriteFailure()).isInstanceOf(StaleFencingTokenException.class)
                    .hasMessageContaining("stock:42").hasMessageContaining(Long.toString(outcome.pausedToken()));
            StaleFencingTokenException refused = (StaleFencingTokenException) outcome.pausedWriteFailure();
            assertThat(refused.acceptedToken()).hasValue(outcome.newerToken());
            assertThat(firstClient.get("stock:42")).isEqualTo("written by the newer holder");
            assertThat(firstGuard.acceptedToken("stock:42")).hasValue(outcome.newerToken());
        }
    }

    @Test
    void eachCommandRefusesALowerTokenAcceptsAnEqualOneAndKeepsTheLargest() {
        try (RedisClient client = RedisTestSupport.client(redis.server())) {
            FencedRedis fenced = new FencedRedis(client);

            fenced.hset("account:{7}", "balance", "100", 20);
            fenced.hset("account:{7}", "owner", "ann", 20);
            assertThatThrownBy(() -> fenced.hset("account:{7}", "balance", "0", 19))
                    .isInstanceOf(StaleFencingTokenException.class)
                    .hasMessage("Stale fencing token for Redis key 'account:{7}': offered 19, but 20 was already accepted; "
                            + "the lock was lost and a newer holder has written, so this write was refused");
            assertThat(client.hgetAll("account:{7}")).isEqualTo(Map.of("balance", "100", "owner", "ann"));

            fenced.rpush("journal", "a", 5);
            fenced.rpush("journal", "b", 6);
            assertThatThrownBy(() -> fenced.rpush("journal", "late", 5)).isInstanceOf(StaleFencingTokenException.class);
            assertThat(client.lrange("journal", 0, -1)).containsExactly("a", "b");
            assertThat(fenced.acceptedToken("journal")).hasValue(6);

            fenced.set("plain", "x", 3);
            fenced.delete("plain");
            fenced.set("plain", "after a reset", 1);
            assertThat(client.get("plain")).isEqualTo("after a reset");
        }
    }

    @Test
    void theTokenSharesTheValuesSlotAndExpiresWithIt() {
        for (String key : new String[] {"order:7", "order:{7}:lines", "a key with spaces"}) {
            assertThat(JedisClusterCRC16.getSlot(FencedRedis.tokenKey(key))).as(key).isEqualTo(JedisClusterCRC16.getSlot(key));
        }
        assertThatThrownBy(() -> FencedRedis.tokenKey("a}b")).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("'a}b'");
        try (RedisClient client = RedisTestSupport.client(redis.server()); Jedis admin = redis.server().admin()) {
            FencedRedis fenced = new FencedRedis(client);
            fenced.set("session:9", "v", 4, Duration.ofSeconds(30));
            assertThat(admin.pttl(FencedRedis.tokenKey("session:9"))).isBetween(1L, 30_000L);
            fenced.set("session:9", "kept forever", 4);
            assertThat(admin.pttl("session:9")).isEqualTo(-1L);
            assertThat(admin.pttl(FencedRedis.tokenKey("session:9"))).isEqualTo(-1L);
        }
    }
}
