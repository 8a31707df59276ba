package dev.dlock.boottests.storedown;

import dev.dlock.annotation.DistributedLock;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.stereotype.Service;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;

import java.util.concurrent.atomic.AtomicInteger;

/** A web application with one locked endpoint; its lock store comes from the test's properties. */
@SpringBootApplication
public class OrderApplication {

    /** The locked service: counts the calls that ran. */
    @Service
    public static class Shipping {

        private final AtomicInteger shipped = new AtomicInteger();

        /** Ships an order under the lock {@code orders:<id>}. */
        @DistributedLock(name = "orders", key = "#orderId")
        public String ship(String orderId) {
            shipped.incrementAndGet();
            return "shipped " + orderId;
        }

        /** How many calls ran the method body. */
        public int shipped() {
            return shipped.get();
        }
    }

    /** {@code GET /orders/{id}/ship}: the locked call, over HTTP. */
    @RestController
    static class Orders {

        private final Shipping shipping;

        Orders(Shipping shipping) {
            this.shipping = shipping;
        }

        @GetMapping("/orders/{id}/ship")
        String ship(@PathVariable String id) {
            return shipping.ship(id);
        }
    }
}
