package dev.dlock.aot;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.aspect.LockContext;
import dev.dlock.core.LockManager;
import dev.dlock.redis.FencedRedis;
import org.springframework.stereotype.Service;

/** One locked method whose key reads a record parameter, writing fenced by its token. */
@Service
public class OrderService {

    /** The lock's name: its store keys are {@code order:<id>}. */
    public static final String LOCK = "order";

    private final FencedRedis fenced;
    private final LockManager lockManager;

    OrderService(FencedRedis fenced, LockManager lockManager) {
        this.fenced = fenced;
        this.lockManager = lockManager;
    }

    /**
     * Writes {@code order.item} to {@code stock:<id>} fenced by the lock's token, then holds the lock {@code holdMillis}
     * more, so that a test can see it held. Answers what the locked method saw of its lock.
     */
    @DistributedLock(name = LOCK, key = "#order.id")
    public Shipped ship(Order order, long holdMillis, @FencingToken long token) throws InterruptedException {
        LockContext lock = LockContext.current();
        fenced.set("stock:" + order.id(), order.item(), token);
        int holdersInStore = lockManager.admin().holders(lock.key()).size();
        Thread.sleep(holdMillis);
        return new Shipped(lock.key(), token, holdersInStore, lock.isHeld());
    }

    /**
     * What {@link #ship} saw.
     *
     * @param holdersInStore how many holders the store listed for the key inside the method
     */
    public record Shipped(String key, long token, int holdersInStore, boolean held) {
    }
}
