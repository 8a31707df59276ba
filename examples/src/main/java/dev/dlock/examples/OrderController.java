package dev.dlock.examples;

import dev.dlock.annotation.FencingToken;
import dev.dlock.core.LockNotAcquiredException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

/** The flash sale's HTTP API. */
@RestController
public class OrderController {

    private final OrderService orders;
    private final Stock stock;
    private final Ledger ledger;

    /** Wires the services. */
    public OrderController(OrderService orders, Stock stock, Ledger ledger) {
        this.orders = orders;
        this.stock = stock;
        this.ledger = ledger;
    }

    /** Buys one item through the annotated method. */
    @PostMapping("/orders")
    public ResponseEntity<OrderResult> place(@RequestBody Order order) {
        return respond(orders.place(order));
    }

    /** Buys one item through the annotated method that returns a CompletableFuture. */
    @PostMapping("/orders/async")
    public CompletableFuture<ResponseEntity<OrderResult>> placeAsync(@RequestBody Order order) {
        return orders.placeAsync(order, FencingToken.FROM_THE_LOCK).handle((result, failure) -> {
            if (failure == null) {
                return respond(result);
            }
            Throwable cause = failure instanceof CompletionException ? failure.getCause() : failure;
            if (cause instanceof LockNotAcquiredException notAcquired) {
                return notAcquired(order.orderId(), notAcquired);
            }
            throw new CompletionException(cause);
        });
    }

    /** Buys one item through the programmatic API. */
    @PostMapping("/orders/programmatic")
    public ResponseEntity<OrderResult> placeProgrammatically(@RequestBody Order order) {
        return respond(orders.placeProgrammatically(order));
    }

    /** Puts {@code quantity} items of a product on sale. */
    @PutMapping("/products/{productId}/stock")
    public Map<String, Object> reset(@PathVariable String productId, @RequestParam int quantity) {
        stock.reset(productId, quantity);
        return product(productId);
    }

    /** A product's stock, sales, and whether its ledger's fencing tokens only increased. */
    @GetMapping("/products/{productId}")
    public Map<String, Object> product(@PathVariable String productId) {
        List<Long> tokens = ledger.tokens(productId);
        boolean increasing = true;
        for (int i = 1; i < tokens.size(); i++) {
            increasing &= tokens.get(i) > tokens.get(i - 1);
        }
        return Map.of("productId", productId, "remaining", stock.remaining(productId), "sold", stock.sold(productId),
                "ledgerEntries", tokens.size(), "fencingTokensIncreasing", increasing);
    }

    /** The lock could not be had: the sale ended while waiting (409), or the wait timed out (503). */
    @ExceptionHandler(LockNotAcquiredException.class)
    public ResponseEntity<OrderResult> onNotAcquired(LockNotAcquiredException e) {
        return notAcquired(null, e);
    }

    private static ResponseEntity<OrderResult> notAcquired(String orderId, LockNotAcquiredException e) {
        boolean aborted = e.reason() == LockNotAcquiredException.Reason.ABORTED;
        return ResponseEntity.status(aborted ? HttpStatus.CONFLICT : HttpStatus.SERVICE_UNAVAILABLE)
                .body(new OrderResult(orderId, aborted ? OrderResult.Status.ABORTED : OrderResult.Status.REJECTED, 0));
    }

    private static ResponseEntity<OrderResult> respond(OrderResult result) {
        HttpStatus status = switch (result.status()) {
            case SOLD -> HttpStatus.CREATED;
            case SOLD_OUT -> HttpStatus.GONE;
            case FENCED_OFF -> HttpStatus.CONFLICT;
            default -> HttpStatus.OK;
        };
        return ResponseEntity.status(status).body(result);
    }
}
