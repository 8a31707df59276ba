package dev.dlock.quickstart;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The README's quick start as a new Boot application: nothing but the starter, its YAML and one locked method. */
@SpringBootApplication
public class QuickStartApplication {
}
