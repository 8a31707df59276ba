package dev.dlock.boottests.stores;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.DistributedLockProperties;
import dev.dlock.boot.JdbcLockStoreAutoConfiguration;
import dev.dlock.boot.JdbcStoreProperties;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.jdbc.JdbcDialect;
import dev.dlock.jdbc.JdbcLockBackend;
import dev.dlock.testkit.OverlapDetector;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.jdbc.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;

import java.io.PrintWriter;
import java.io.StringWriter;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Spring Boot 3.5 application with dlock-jdbc-spring-boot3-starter, {@code dlock.store=jdbc} and
 * Boot's own DataSource from {@code spring.datasource.*} (H2 in memory, with a password): its annotated
 * method locks in the database without overlap, and the database password appears in no log line, no
 * actuator answer, no properties' {@code toString()} and no exception of a failed start.
 */
@ExtendWith(OutputCaptureExtension.class)
@SpringBootTest(classes = LedgerApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "dlock.store=jdbc",
                "dlock.lease-time=2s",
                "spring.datasource.url=" + JdbcStoreApplicationTest.URL,
                "spring.datasource.username=ledger",
                "spring.datasource.password=" + JdbcStoreApplicationTest.PASSWORD,
                "management.endpoints.web.exposure.include=health,dlock",
                "management.endpoint.health.show-details=always",
                "logging.level.dev.dlock=DEBUG"})
class JdbcStoreApplicationTest {

    /** The database password: distinctive, so that any leak of it is found by a plain search. */
    static final String PASSWORD = "jdbc-pw-7c2e9a41-never-logged";
    /** Kept while the JVM runs, so a second application can try the same database with a wrong password. */
    static final String URL = "jdbc:h2:mem:ledger;DB_CLOSE_DELAY=-1";

    @LocalServerPort
    private int port;

    @Autowired
    private LedgerApplication.Ledger ledger;

    @Autowired
    private OverlapDetector overlaps;

    @Autowired
    private ApplicationContext context;

    @Test
    void annotatedMethodLocksInTheDatabaseWithoutOverlap() throws Exception {
        assertThat(SpringBootVersion.getVersion()).as("Spring Boot line of this module").startsWith("3.5.");
        assertThat(context.getBean(LockBackend.class)).isInstanceOfSatisfying(JdbcLockBackend.class,
                jdbc -> assertThat(jdbc.dialect()).isEqualTo(JdbcDialect.H2));
        AppChecks.postConcurrentlyWithoutOverlap(ledger, overlaps, 4, 15);
    }

    @Test
    void thePasswordAppearsInNoLogNoActuatorAnswerAndNoToString(CapturedOutput output) throws Exception {
        assertThat(output.getAll()).as("captured log").contains("dlock locks in table");
        AppChecks.assertSecretInNoActuatorAnswerAndNoLog(port, ledger, output, PASSWORD,
                context.getBean(JdbcStoreProperties.class).toString(), context.getBean(DistributedLockProperties.class).toString());
    }

    @Test
    void aStartThatCannotLogInNamesNoPassword() {
        String wrongPassword = "jdbc-wrong-pw-3b8d0f52";
        new ApplicationContextRunner()
                .withConfiguration(AutoConfigurations.of(DataSourceAutoConfiguration.class,
                        JdbcLockStoreAutoConfiguration.class, DistributedLockAutoConfiguration.class))
                .withPropertyValues("dlock.store=jdbc", "dlock.jdbc.initialize-schema=always", "spring.datasource.url=" + URL,
                        "spring.datasource.username=ledger", "spring.datasource.password=" + wrongPassword)
                .run(failed -> {
                    assertThat(failed).hasFailed();
                    StringWriter trace = new StringWriter();
                    failed.getStartupFailure().printStackTrace(new PrintWriter(trace));
                    assertThat(trace.toString()).as("the failure and all its causes")
                            .containsIgnoringCase("password")
                            .doesNotContain(wrongPassword).doesNotContain(PASSWORD);
                });
    }
}
