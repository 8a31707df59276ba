package dev.dlock.dashboard;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/**
 * The README's quick start as an application of this Boot line: nothing but the README's dependencies (the module that
 * runs it has exactly those), its application.yml (dashboard.yml) and its OrderService.
 */
@SpringBootApplication
public class DashboardApplication {
}
