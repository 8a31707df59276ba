package dev.dlock.examples;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.aspect.LockContext;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import org.springframework.beans.factory.annotation.Value;
import org.springframework.stereotype.Service;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

/**
 * Sells items. The three ways of ordering share one lock per product, {@code stock:<productId>}:
 * the annotation (synchronous and asynchronous) and the programmatic API.
 */
@Service
public class OrderService {

    private final Stock stock;
    private final Ledger ledger;
    private final LockManager locks;
    private final Duration paymentTime;
    private final Executor payments = Executors.newFixedThreadPool(4);

    /** Wires the stock, the ledger and the lock manager the starter configured. */
    public OrderService(Stock stock, Ledger ledger, LockManager locks,
                        @Value("${flashsale.payment-time:300ms}") Duration paymentTime) {
        this.stock = stock;
        this.ledger = ledger;
        this.locks = locks;
        this.paymentTime = paymentTime;
    }

    /** Places an order under the product's lock; waiters give up as soon as the product sells out. */
    @DistributedLock(name = "stock", key = "#order.productId", abortIf = "@stock.soldOut(#order.productId)")
    public OrderResult place(Order order) {
        return sell(order, LockContext.current().fencingToken());
    }

    /**
     * Places an order whose payment completes later: the lock is held until the returned future
     * completes (the watchdog renews it meanwhile), not until this method returns. The lock's fencing
     * token comes as a parameter, issued with the acquisition.
     */
    @DistributedLock(name = "stock", key = "#order.productId", abortIf = "@stock.soldOut(#order.productId)")
    public CompletableFuture<OrderResult> placeAsync(Order order, @FencingToken long fencingToken) {
        return CompletableFuture.supplyAsync(() -> {
            sleep(paymentTime);
            return sell(order, fencingToken);
        }, payments);
    }

    /** Places an order through the programmatic API, writing the lock's fencing token with the order. */
    public OrderResult placeProgrammatically(Order order) {
        LockRequest request = LockRequest.builder("stock:" + order.productId())
                .name("stock")
                .abortIf(() -> stock.soldOut(order.productId()))
                .build();
        try (LockHandle lock = locks.acquire(request)) {
            return sell(order, lock.fencingToken());
        }
    }

    private OrderResult sell(Order order, long fencingToken) {
        if (!stock.takeOne(order.productId())) {
            return new OrderResult(order.orderId(), OrderResult.Status.SOLD_OUT, fencingToken);
        }
        boolean written = ledger.append(order.productId(), order.orderId(), fencingToken);
        return new OrderResult(order.orderId(), written ? OrderResult.Status.SOLD : OrderResult.Status.FENCED_OFF, fencingToken);
    }

    private static void sleep(Duration duration) {
        try {
            TimeUnit.NANOSECONDS.sleep(duration.toNanos());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
