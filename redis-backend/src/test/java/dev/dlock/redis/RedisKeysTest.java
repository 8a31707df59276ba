package dev.dlock.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.util.HashSet;
import java.util.List;
import java.util.Set;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.api.Test;

import dev.dlock.core.LockKeyException;

import redis.clients.jedis.util.JedisClusterCRC16;

class RedisKeysTest {

    private final RedisKeys keys = new RedisKeys("dlock:");

    static List<String> awkwardKeys() {
        return List.of("order-42", "}abc", "a}b", "{x}", "{", "}", "{}", "}{", "%", "%7D", "%25", "a{b}c{d}",
                " ", "  two spaces ", "key:with:colons", "ключ-с-юникодом-日本語-🔒",
                "🔒".repeat(250), "x".repeat(1024), "{" + "ü".repeat(500) + "}");
    }

    @Test
    void aKeyWithNothingToEncodeIsUsedAsItIsAndEachSpecialCharacterIsEncoded() {
        String plain = "order:" + 42;
        assertThat(RedisKeys.escape(plain)).isSameAs(plain);
        assertThat(RedisKeys.escape("a%b")).isEqualTo("a%25b");
        assertThat(RedisKeys.escape("{a")).isEqualTo("%7Ba");
        assertThat(RedisKeys.escape("a}")).isEqualTo("a%7D");
    }

    @ParameterizedTest
    @MethodSource("awkwardKeys")
    void lockKeyCounterAndChannelShareOneSlot(String key) {
        int slot = JedisClusterCRC16.getSlot(keys.lockKey(key));
        assertThat(JedisClusterCRC16.getSlot(keys.counterKey(key))).isEqualTo(slot);
        assertThat(JedisClusterCRC16.getSlot(keys.releaseChannel(key))).isEqualTo(slot);
        assertThat(keys.slot(key)).isEqualTo(slot);
    }

    @ParameterizedTest
    @MethodSource("awkwardKeys")
    void hashTagIsTheWholeEscapedKeyAndNeverEmpty(String key) {
        String lockKey = keys.lockKey(key);
        int open = lockKey.indexOf('{');
        int close = lockKey.indexOf('}', open + 1);
        assertThat(close).isEqualTo(lockKey.length() - 1);
        assertThat(close - open).isGreaterThan(1);
    }

    @Test
    void distinctKeysMapToDistinctLockKeys() {
        List<String> all = new java.util.ArrayList<>(awkwardKeys());
        all.addAll(List.of("%7B", "%7b", "{", "a%b", "a%25b", "a}b", "a%7Db"));
        Set<String> distinctInputs = new HashSet<>(all);
        Set<String> lockKeys = new HashSet<>();
        for (String key : distinctInputs) {
            lockKeys.add(keys.lockKey(key));
        }
        assertThat(lockKeys).hasSameSizeAs(distinctInputs);
    }

    @Test
    void escapingLeavesPlainKeysUntouched() {
        assertThat(keys.lockKey("order-42")).isEqualTo("dlock:{order-42}");
        assertThat(keys.counterKey("order-42")).isEqualTo("dlock:{order-42}:fence");
        assertThat(keys.releaseChannel("order-42")).isEqualTo("dlock:{order-42}:released");
        assertThat(keys.lockKey("a}b{c%")).isEqualTo("dlock:{a%7Db%7Bc%25}");
    }

    @Test
    void emptyKeyIsRejected() {
        assertThatThrownBy(() -> keys.lockKey("")).isInstanceOf(LockKeyException.class);
        assertThatThrownBy(() -> keys.lockKey(null)).isInstanceOf(LockKeyException.class);
    }

    @Test
    void prefixWithBracesIsRejected() {
        assertThatThrownBy(() -> RedisKeys.validatePrefix("app{1}:"))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("keyPrefix");
    }
}
