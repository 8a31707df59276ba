package dev.dlock.aot;

import org.springframework.context.ApplicationContext;
import org.springframework.aot.AotDetector;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.Map;

/** The HTTP face of the test: a locked call, and what the running context says of AOT. */
@RestController
public class OrderController {

    /** Spring's own bean that parses @Configuration classes; a context started from AOT-generated code has none. */
    private static final String CONFIGURATION_PARSER = "org.springframework.context.annotation.internalConfigurationAnnotationProcessor";

    private final OrderService orders;
    private final ApplicationContext context;

    OrderController(OrderService orders, ApplicationContext context) {
        this.orders = orders;
        this.context = context;
    }

    /** Ships an order under its lock. */
    @PostMapping("/orders/{id}/ship")
    public OrderService.Shipped ship(@PathVariable String id, @RequestParam String item,
                                     @RequestParam(defaultValue = "0") long holdMillis) throws InterruptedException {
        return orders.ship(new Order(id, item), holdMillis, 0);
    }

    /** Whether this context runs on the generated initializer: AOT mode on, and no configuration class parsing. */
    @GetMapping("/aot")
    public Map<String, Object> aot() {
        return Map.of("aotEnabled", AotDetector.useGeneratedArtifacts(),
                "configurationClassParsing", context.containsBeanDefinition(CONFIGURATION_PARSER),
                "contextType", context.getClass().getName());
    }
}
