package dev.dlock.boot.admin;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** A web application on the in-memory store, for the endpoint's holder and forced release operations. */
@SpringBootApplication
public class LockAdminApplication {
}
