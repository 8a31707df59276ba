package dev.dlock.boot.stubbed;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The application of docs/testing.md's example: a locked service and the collaborator it calls. */
@SpringBootApplication
public class ShippingApplication {
}
