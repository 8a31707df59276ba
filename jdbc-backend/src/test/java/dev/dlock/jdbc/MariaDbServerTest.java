package dev.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.UUID;

import org.junit.jupiter.api.Test;

/** The MariaDB harness touches no server it did not start: not even another server's temporary files. */
class MariaDbServerTest {

    @Test
    void startingAServerLeavesTheTemporaryTablesOfOtherServersAlone() throws Exception {
        // Where a MariaDB server keeps temporary tables unless told otherwise: the machine's own server, and another
        // test JVM's server starting beside this one.
        Path sharedTmp = Path.of(System.getenv().getOrDefault("TMPDIR", "/tmp"));
        Path othersTable = sharedTmp.resolve("#sql-temptable-dlock-probe-" + UUID.randomUUID() + ".MAI");
        Files.createFile(othersTable);
        try (MariaDbServer server = MariaDbServer.start()) {
            assertThat(othersTable).as("another server's temporary table after ours started").exists();
        } finally {
            Files.deleteIfExists(othersTable);
        }
    }
}
