package dev.dlock.core;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

class CoreIsFrameworkFreeTest {

    @Test
    void theEngineImportsNothingFromSpring() throws IOException {
        Path core = Path.of("src/main/java/dev/dlock/core");
        assertThat(core).isDirectory();
        List<String> offenders;
        try (Stream<Path> files = Files.walk(core)) {
            offenders = files.filter(p -> p.toString().endsWith(".java"))
                    .filter(p -> {
                        try {
                            return Files.readAllLines(p).stream().anyMatch(l -> l.startsWith("import org.springframework")
                                    || l.startsWith("import static org.springframework"));
                        } catch (IOException e) {
                            throw new IllegalStateException(e);
                        }
                    })
                    .map(Path::toString).toList();
        }
        assertThat(offenders).as("dev.dlock.core must not depend on Spring").isEmpty();
    }
}
