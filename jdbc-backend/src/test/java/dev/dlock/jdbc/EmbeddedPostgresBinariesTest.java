package dev.dlock.jdbc;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * The embedded PostgreSQL binaries (what a machine without PostgreSQL runs) are unpacked once per machine; the test
 * JVMs of one module run side by side, so two of them may be first at the same moment.
 */
class EmbeddedPostgresBinariesTest {

    @Test
    void twoJvmsUnpackingAtOnceBothGetTheBinaries() throws Exception {
        Path tmp = ServerProcesses.tempDirectory("dlock-unpack-race-");
        try {
            String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
            List<Process> jvms = new ArrayList<>();
            for (int i = 0; i < 2; i++) {
                jvms.add(new ProcessBuilder(java, "-cp", System.getProperty("java.class.path"), "-Djava.io.tmpdir=" + tmp,
                        Unpack.class.getName())
                        .redirectErrorStream(true)
                        .redirectOutput(tmp.resolveSibling(tmp.getFileName() + "-jvm" + i + ".log").toFile())
                        .start());
            }
            for (int i = 0; i < jvms.size(); i++) {
                Process jvm = jvms.get(i);
                assertThat(jvm.waitFor(120, TimeUnit.SECONDS)).as("JVM %d finished", i).isTrue();
                String log = Files.readString(tmp.resolveSibling(tmp.getFileName() + "-jvm" + i + ".log"));
                assertThat(jvm.exitValue()).as("JVM %d's exit; its output:%n%s", i, log).isZero();
            }
        } finally {
            ServerProcesses.deleteRecursively(tmp);
            for (int i = 0; i < 2; i++) {
                Files.deleteIfExists(tmp.resolveSibling(tmp.getFileName() + "-jvm" + i + ".log"));
            }
        }
    }

    /** A child JVM: unpacks the binaries under its {@code java.io.tmpdir} and fails unless pg_ctl can run. */
    public static final class Unpack {
        public static void main(String[] args) {
            Path bin = PostgresServer.extracted();
            if (!Files.isExecutable(bin.resolve("pg_ctl"))) {
                throw new IllegalStateException("no pg_ctl in " + bin);
            }
        }
    }
}
