package dev.dlock.boot.app;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A Boot application with nothing but the starter on its classpath: locks come from application.yml. */
@SpringBootApplication
public class ShopApplication {
}
