package dev.dlock.boot.stubbed;

/** What the locked method calls: a courier in production, a stub in the test. */
public interface Shipping {

    /** Sends the order. */
    void send(String orderId);
}
