package dev.dlock.fencing;

import dev.dlock.jdbc.MariaDbServer;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/** The fencing guards on a MariaDB server started for this class (the MySQL SQL); aborted when none is installed. */
class FencingGuardsMariaDbTest extends FencingGuardsContract {

    private static MariaDbServer mariaDb;

    @BeforeAll
    static void startMariaDb() {
        mariaDb = MariaDbServer.start();
    }

    @AfterAll
    static void stopMariaDb() {
        if (mariaDb != null) {
            mariaDb.close();
        }
    }

    @Override
    String jdbcUrl() {
        return mariaDb.jdbcUrl();
    }

    @Override
    String user() {
        return "root";
    }
}
