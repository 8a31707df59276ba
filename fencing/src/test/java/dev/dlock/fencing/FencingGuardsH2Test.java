package dev.dlock.fencing;

/** The fencing guards on H2 (in memory, kept for the JVM's life). */
class FencingGuardsH2Test extends FencingGuardsContract {

    @Override
    String jdbcUrl() {
        return "jdbc:h2:mem:dlock-fencing;DB_CLOSE_DELAY=-1";
    }

    @Override
    String user() {
        return "sa";
    }
}
