package dev.dlock.boot.web;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * A web application on the in-memory store whose locked calls meet a busy lock: the same controllers run on Spring
 * MVC ({@link MvcLockBusyTest}) and on WebFlux ({@link WebFluxLockBusyTest}).
 */
@SpringBootApplication
public class ReportApplication {
}
