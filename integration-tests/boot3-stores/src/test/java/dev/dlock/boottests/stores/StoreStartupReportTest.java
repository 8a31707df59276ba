package dev.dlock.boottests.stores;

import dev.dlock.testkit.OverlapDetector;
import org.apache.curator.test.InstanceSpec;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * dlock.verify-on-start on Spring Boot 3.5 with the JDBC and ZooKeeper starters: a store that cannot be
 * used stops the start of the ledger application, and Spring Boot's failure report names what to fix.
 * The database is an in-memory H2 without dlock's table; the ensemble a loopback port nothing listens on.
 */
@ExtendWith(OutputCaptureExtension.class)
class StoreStartupReportTest {

    @Test
    void aMissingLockTableIsReportedWithTheDdlAndInitializeSchema(CapturedOutput output) {
        String report = failedStart(output, "dlock.store=jdbc", "dlock.jdbc.initialize-schema=never",
                "spring.datasource.url=jdbc:h2:mem:no-lock-table;DB_CLOSE_DELAY=-1");
        assertThat(report).contains("dlock's lock table dlock_locks is missing or cannot be read")
                .contains("schema-h2.sql").contains("dlock.jdbc.initialize-schema=always");
    }

    @Test
    void anEnsembleThatDoesNotAnswerIsReportedWithinTheConnectionTimeout(CapturedOutput output) {
        String nowhere = "127.0.0.1:" + InstanceSpec.getRandomPort();
        String report = failedStart(output, "dlock.store=zookeeper", "dlock.zookeeper.connect-string=" + nowhere,
                "dlock.zookeeper.connection-timeout=1s");
        assertThat(report).contains("dlock cannot use ZooKeeper at " + nowhere + ": no connection within 1s")
                .contains("Check dlock.zookeeper.connect-string");
    }

    /** The ledger service with auto-configuration, without a web server and without scanning the package. */
    @TestConfiguration(proxyBeanMethods = false)
    @EnableAutoConfiguration
    @Import(LedgerApplication.Ledger.class)
    static class LedgerOnly {
        @Bean
        OverlapDetector ledgerOverlaps() {
            return new OverlapDetector();
        }
    }

    /** Runs the application, which must fail, and returns Spring Boot's failure report ("" when none was printed). */
    private static String failedStart(CapturedOutput output, String... properties) {
        int before = output.getOut().length();
        assertThatThrownBy(() -> new SpringApplicationBuilder(LedgerOnly.class).web(WebApplicationType.NONE)
                .properties("spring.main.banner-mode=off")
                .run(Arrays.stream(properties).map(property -> "--" + property).toArray(String[]::new))
                .close()).isNotNull();
        String printed = output.getOut().substring(before);
        int report = printed.indexOf("APPLICATION FAILED TO START");
        return report < 0 ? "" : printed.substring(report);
    }
}
