package dev.dlock.jdbc;

import java.nio.file.Path;

import org.junit.jupiter.api.Tag;
import org.junit.jupiter.api.Test;

import dev.dlock.testkit.faults.Fault;
import dev.dlock.testkit.faults.FaultGuarantees;
import dev.dlock.testkit.faults.FaultReport;
import dev.dlock.testkit.faults.FaultSuite;

/**
 * The fault suite's short mode on the JDBC store over PostgreSQL: 3 worker JVMs × 6 threads, each with
 * its own connection pool, write to the fencing referee while holders are killed and paused past their
 * lease and PostgreSQL crashes ({@code pg_ctl stop -m immediate}) and starts again on the same data.
 * What users rely on must hold: no overlap gets past the fencing check, no holder loses its lease
 * without being told, nothing stays locked, the workload recovers after every fault.
 */
@Tag("fault-suite")
class PostgresFaultSuiteTest {

    @Test
    void postgresUnderKillsPausesAndRestarts() throws Exception {
        try (PostgresServer postgres = PostgresServer.start()) {
            String connection = PostgresContractTest.connectionOf(postgres);
            PostgresContractTest.createSchema(connection);
            FaultSuite.Settings settings = FaultSuite.Settings.shortMode().fromSystemProperties();
            FaultReport report = FaultSuite.builder("JDBC on PostgreSQL", new JdbcBackendFactory(), connection)
                    .settings(settings)
                    .fault(Fault.killHolder())
                    .fault(Fault.pauseHolder(settings.leaseTime().multipliedBy(2)))
                    .fault(Fault.of("store-restart", () -> {
                        long crashedAt = System.nanoTime();
                        postgres.crash();
                        postgres.launch();
                        return "pg_ctl stop -m immediate (a crash) and a start on the same data, up after "
                                + (System.nanoTime() - crashedAt) / 1_000_000 + " ms";
                    }))
                    .directory(Path.of("target", "fault-suite", "postgres"))
                    .build().run();
            FaultGuarantees.assertHeld(report, FaultGuarantees.STORE_ERRORS);
        }
    }
}
