package dev.dlock.examples;

/** A purchase request: one item of {@code productId} for {@code buyer}. */
public record Order(String orderId, String productId, String buyer) {
}
