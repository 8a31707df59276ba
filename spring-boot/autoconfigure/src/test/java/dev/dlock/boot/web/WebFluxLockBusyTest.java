package dev.dlock.boot.web;

import org.springframework.boot.test.context.SpringBootTest;

/** A busy lock on Spring WebFlux, controllers returning {@code Mono}. */
@SpringBootTest(classes = ReportApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "dlock.on-lease-lost=throw", "spring.main.web-application-type=reactive"})
class WebFluxLockBusyTest extends LockBusyAnswerContract {

    @Override
    String prefix() {
        return "/reactive";
    }
}
