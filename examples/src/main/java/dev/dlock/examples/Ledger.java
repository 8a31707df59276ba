package dev.dlock.examples;

import dev.dlock.core.StaleFencingTokenException;
import dev.dlock.redis.FencedRedis;
import org.springframework.stereotype.Component;
import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/**
 * The order book of a product: every sale is appended with the fencing token of the lock it was
 * made under, through dlock's {@link FencedRedis}, which refuses a token lower than the last one the
 * ledger accepted — so a holder whose lease was lost (paused, partitioned) cannot write after the
 * next holder did.
 */
@Component
public class Ledger {

    private final UnifiedJedis redis;
    private final FencedRedis fenced;

    /** Uses the Redis client the dlock starter configured. */
    public Ledger(UnifiedJedis redis) {
        this.redis = redis;
        this.fenced = new FencedRedis(redis);
    }

    static String key(String productId) {
        return "example:ledger:" + productId;
    }

    /** Records a sale made under {@code fencingToken}; false when a newer token was already written. */
    public boolean append(String productId, String orderId, long fencingToken) {
        try {
            fenced.rpush(key(productId), fencingToken + " " + orderId, fencingToken);
            return true;
        } catch (StaleFencingTokenException refused) {
            return false;
        }
    }

    /** Forgets the product's sales, and the token the ledger last accepted. */
    public static void reset(UnifiedJedis redis, String productId) {
        new FencedRedis(redis).delete(key(productId));
    }

    /** The fencing tokens of the product's sales, in the order they were written. */
    public List<Long> tokens(String productId) {
        return redis.lrange(key(productId), 0, -1).stream().map(entry -> Long.parseLong(entry.split(" ", 2)[0])).toList();
    }
}
