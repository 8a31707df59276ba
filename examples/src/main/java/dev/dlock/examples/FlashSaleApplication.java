package dev.dlock.examples;

import dev.dlock.examples.demo.FlashSaleDemo;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;

import java.util.Arrays;

/** The flash-sale service; {@code demo} as first argument runs the two-instance demo instead. */
@SpringBootApplication
public class FlashSaleApplication {

    /** Starts the service, or the demo with {@code demo [options]}. */
    public static void main(String[] args) throws Exception {
        if (args.length > 0 && args[0].equals("demo")) {
            System.exit(FlashSaleDemo.run(Arrays.copyOfRange(args, 1, args.length)));
        }
        SpringApplication.run(FlashSaleApplication.class, args);
    }
}
