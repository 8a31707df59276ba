package dev.dlock.dashboard;

import dev.dlock.annotation.DistributedLock;
import org.springframework.stereotype.Service;

/** The README's quick-start service, word for word (DashboardTest compares them). */
// README quick start: begin
@Service
public class OrderService {

    private final Shipping shipping;

    OrderService(Shipping shipping) {
        this.shipping = shipping;
    }

    @DistributedLock(key = "#orderId")
    public void ship(String orderId) {
        shipping.send(orderId);   // one caller at a time per order id, on every instance
    }
}
// README quick start: end
