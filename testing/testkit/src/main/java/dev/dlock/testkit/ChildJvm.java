package dev.dlock.testkit;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * The command line of a child JVM that runs a main class on this JVM's class path, for tests that contend or hold
 * from another process. Children live seconds, so they start with the client compiler only and the serial collector:
 * on a machine shared with another build, a child's start then costs about half the CPU (and a Boot child no longer
 * takes a minute to serve).
 */
public final class ChildJvm {

    private ChildJvm() {
    }

    /** {@code java <light flags> -cp <this class path> <main> <arguments>}, on this JVM's own java binary. */
    public static List<String> command(Class<?> main, String... arguments) {
        List<String> command = new ArrayList<>(List.of(javaBinary(), "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC",
                "-Xshare:auto", "-cp", System.getProperty("java.class.path"), main.getName()));
        command.addAll(List.of(arguments));
        return command;
    }

    /** The java binary this JVM runs on, so that a child runs on the same JDK (17 or 25). */
    public static String javaBinary() {
        return ProcessHandle.current().info().command()
                .orElse(Path.of(System.getProperty("java.home"), "bin", "java").toString());
    }
}
