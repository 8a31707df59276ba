package dev.dlock.examples;

import org.springframework.stereotype.Component;
import redis.clients.jedis.UnifiedJedis;

/**
 * Product stock kept in Redis, shared by every instance of the service. Taking an item is a
 * deliberately non-atomic read-modify-write: only the distributed lock keeps two buyers on two
 * instances from selling the same item.
 */
@Component("stock")
public class Stock {

    private final UnifiedJedis redis;

    /** Uses the Redis client the dlock starter configured. */
    public Stock(UnifiedJedis redis) {
        this.redis = redis;
    }

    /** Puts {@code quantity} items on sale and forgets earlier sales of the product. */
    public void reset(String productId, int quantity) {
        redis.set(stockKey(productId), Integer.toString(quantity));
        redis.del(soldKey(productId));
        Ledger.reset(redis, productId);
    }

    /** Items left. */
    public int remaining(String productId) {
        String value = redis.get(stockKey(productId));
        return value == null ? 0 : Integer.parseInt(value);
    }

    /** True once nothing is left; the {@code abortIf} of the order methods, so that waiters give up at once. */
    public boolean soldOut(String productId) {
        return remaining(productId) <= 0;
    }

    /** Items sold (an atomic counter, to compare with the stock taken). */
    public long sold(String productId) {
        String value = redis.get(soldKey(productId));
        return value == null ? 0 : Long.parseLong(value);
    }

    /** Takes one item if any is left: read, think, write back. Not atomic on purpose. */
    public boolean takeOne(String productId) {
        int left = remaining(productId);
        if (left <= 0) {
            return false;
        }
        pause();
        redis.set(stockKey(productId), Integer.toString(left - 1));
        redis.incr(soldKey(productId));
        return true;
    }

    private static void pause() {
        // Widens the read-modify-write window, so that any overlap would oversell.
        try {
            Thread.sleep(2);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String stockKey(String productId) {
        return "example:stock:" + productId;
    }

    private static String soldKey(String productId) {
        return "example:sold:" + productId;
    }
}
