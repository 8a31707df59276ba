package dev.dlock.examples;

import org.springframework.stereotype.Component;
import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/**
 * The order book of a product: every sale is written with the fencing token of the lock it was
 * made under, and the ledger itself refuses a token not larger than the last one it accepted —
 * so a holder whose lease was lost (paused, partitioned) cannot write after the next holder did.
 */
@Component
public class Ledger {

    private static final String APPEND_IF_NEWER = """
            local last = redis.call('LINDEX', KEYS[1], -1)
            if last and tonumber(string.match(last, '^(%d+)')) >= tonumber(ARGV[1]) then
              return 0
            end
            redis.call('RPUSH', KEYS[1], ARGV[1] .. ' ' .. ARGV[2])
            return 1
            """;

    private final UnifiedJedis redis;

    /** Uses the Redis client the dlock starter configured. */
    public Ledger(UnifiedJedis redis) {
        this.redis = redis;
    }

    static String key(String productId) {
        return "example:ledger:" + productId;
    }

    /** Records a sale made under {@code fencingToken}; false when a newer token was already written. */
    public boolean append(String productId, String orderId, long fencingToken) {
        Object accepted = redis.eval(APPEND_IF_NEWER, List.of(key(productId)), List.of(Long.toString(fencingToken), orderId));
        return Long.valueOf(1).equals(accepted);
    }

    /** The fencing tokens of the product's sales, in the order they were written. */
    public List<Long> tokens(String productId) {
        return redis.lrange(key(productId), 0, -1).stream().map(entry -> Long.parseLong(entry.split(" ", 2)[0])).toList();
    }
}
