package dev.dlock.boot.stubbed;

import dev.dlock.annotation.DistributedLock;
import org.springframework.stereotype.Service;

/** One caller at a time per order id. */
@Service
public class OrderService {

    private final Shipping shipping;

    OrderService(Shipping shipping) {
        this.shipping = shipping;
    }

    /** Ships the order under its lock. */
    @DistributedLock(key = "#orderId")
    public void ship(String orderId) {
        shipping.send(orderId);
    }
}
