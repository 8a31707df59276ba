package dev.dlock.shedlock;

import net.javacrumbs.shedlock.core.LockProvider;
import net.javacrumbs.shedlock.spring.annotation.SchedulerLock;
import org.junit.jupiter.api.Test;

import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The ShedLock these tests run on is the line the build names ({@code dlock.shedlock.expected-version}): 6.x in this
 * module, 7.x in shedlock7/, where dlock-shedlock's classes, compiled against 6.x, meet ShedLock 7. Without this, a pom
 * whose dependencies let ShedLock 6 win would pass every other test and prove nothing.
 */
class ShedLockLineTest {

    @Test
    void shedLockOnTheClassPathIsTheLineUnderTest() throws Exception {
        String expected = System.getProperty("dlock.shedlock.expected-version");
        assertThat(expected).as("dlock.shedlock.expected-version, set by the module's surefire configuration").isNotBlank();
        assertThat(jarOf(LockProvider.class)).isEqualTo("shedlock-core-" + expected + ".jar");
        assertThat(jarOf(SchedulerLock.class)).isEqualTo("shedlock-spring-" + expected + ".jar");
    }

    private static String jarOf(Class<?> type) throws Exception {
        return Path.of(type.getProtectionDomain().getCodeSource().getLocation().toURI()).getFileName().toString();
    }
}
