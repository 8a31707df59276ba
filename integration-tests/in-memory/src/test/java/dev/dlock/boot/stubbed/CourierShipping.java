package dev.dlock.boot.stubbed;

import org.springframework.stereotype.Component;

/** The production collaborator (here it sends nothing); the test puts a stub in its place. */
@Component
class CourierShipping implements Shipping {

    @Override
    public void send(String orderId) {
    }
}
