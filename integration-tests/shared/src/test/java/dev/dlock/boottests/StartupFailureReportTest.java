package dev.dlock.boottests;

import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import dev.dlock.testkit.OverlapDetector;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * What a user reads when an application with a {@code @DistributedLock} service (the shared one) cannot start
 * because of a dlock setting, on this module's Spring Boot line: Spring Boot's failure report, whose
 * Description and Action name the property to fix, and not a stack trace that opens with the aspect's
 * "Advisor sorting failed". Every run points dlock at a loopback port nothing listens on, so no case
 * can reach a Redis it did not start.
 */
@ExtendWith(OutputCaptureExtension.class)
class StartupFailureReportTest {

    private static final int NOTHING_LISTENS = RedisServerProcess.freePort();
    private static final String UNREACHABLE = "dlock.redis.url=redis://127.0.0.1:" + NOTHING_LISTENS;
    /** The line's starter suffix: Boot 3.5 applications take the -boot3- artifacts. */
    private static final String STARTER = SpringBootVersion.getVersion().startsWith("3.")
            ? "-spring-boot3-starter" : "-spring-boot-starter";

    @Test
    void anInvalidValueIsReportedNamingThePropertyAndTheRule(CapturedOutput output) {
        Report report = failedStart(output, UNREACHABLE, "dlock.lease-time=10ms");
        assertThat(report.description()).startsWith("dlock.lease-time is invalid: must be at least 30 ms");
        assertThat(report.action()).contains("dlock.lease-time").doesNotContain("leaseTime(");
    }

    @Test
    void aStoreWhoseModuleIsMissingIsReportedNamingTheStarterToAdd(CapturedOutput output) {
        Report report = failedStart(output, UNREACHABLE, "dlock.store=zookeeper");
        assertThat(report.description())
                .startsWith("dlock.store=zookeeper needs dev.dlock:dlock-zookeeper" + STARTER + " on the class path");
        assertThat(report.action()).contains("dev.dlock:dlock-zookeeper" + STARTER).contains("dlock.store=in-memory");
    }

    @Test
    void aRedisUrlWithoutSchemeIsReportedWithTheUrlToWrite(CapturedOutput output) {
        Report report = failedStart(output, "dlock.redis.url=127.0.0.1:" + NOTHING_LISTENS);
        assertThat(report.description()).startsWith("dlock.redis.url has no redis:// or rediss:// scheme");
        assertThat(report.action()).contains("redis://127.0.0.1:" + NOTHING_LISTENS);
    }

    /** dlock.verify-on-start (on by default): a Redis that does not answer stops the start, naming where it was looked for. */
    @Test
    void aRedisThatDoesNotAnswerStopsTheStartNamingTheUrl(CapturedOutput output) {
        Report report = failedStart(output, UNREACHABLE);
        assertThat(report.description()).startsWith("dlock cannot use Redis at 127.0.0.1:" + NOTHING_LISTENS + " (standalone, from dlock.redis.url)");
        assertThat(report.action()).contains("dlock.redis.url").contains("dlock.verify-on-start=false");
    }

    /** With dlock.verify-on-start=false the application starts as before; locks fail until the store answers. */
    @Test
    void verifyOnStartFalseStartsWithoutTheStore() {
        try (ConfigurableApplicationContext context = run(UNREACHABLE, "dlock.verify-on-start=false")) {
            assertThat(context.isActive()).isTrue();
        }
    }

    /**
     * The shared stock service with auto-configuration, without a web server and without scanning the
     * package (whose other tests' configurations would come along).
     */
    @TestConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(StockService.class)
    static class StockOnly {
        @Bean
        OverlapDetector stockOverlaps() {
            return new OverlapDetector();
        }
    }

    /** Runs the application with {@code properties} as command-line arguments, so that they win over application.yml. */
    private static ConfigurableApplicationContext run(String... properties) {
        return new SpringApplicationBuilder(StockOnly.class).web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off")
                .run(Arrays.stream(properties).map(property -> "--" + property).toArray(String[]::new));
    }

    /** Runs the application, which must fail, and returns the failure report Spring Boot printed. */
    private static Report failedStart(CapturedOutput output, String... properties) {
        int before = output.getOut().length();
        assertThatThrownBy(() -> run(properties).close()).as("the start with %s", List.of(properties))
                .isNotNull();
        String printed = output.getOut().substring(before);
        return Report.of(printed);
    }

    /** The Description and Action of Spring Boot's "APPLICATION FAILED TO START" report; empty when none was printed. */
    private record Report(String description, String action) {

        static Report of(String printed) {
            int start = printed.indexOf("APPLICATION FAILED TO START");
            if (start < 0) {
                return new Report("", "");
            }
            String report = printed.substring(start);
            String description = section(report, "Description:");
            String action = section(report, "Action:");
            assertThat(printed.substring(0, start)).as("the log before the report").doesNotContain("Advisor sorting failed");
            return new Report(description, action);
        }

        /** The text after {@code heading} up to the next blank line after it. */
        private static String section(String report, String heading) {
            int at = report.indexOf(heading);
            if (at < 0) {
                return "";
            }
            String rest = report.substring(at + heading.length()).stripLeading();
            int end = rest.indexOf("\n\n");
            return (end < 0 ? rest : rest.substring(0, end)).strip();
        }
    }
}
