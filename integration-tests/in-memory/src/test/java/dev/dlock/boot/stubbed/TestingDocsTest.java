package dev.dlock.boot.stubbed;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;

/** docs/testing.md shows OrderServiceTest as it is compiled and run here. */
class TestingDocsTest {

    private static final Path DOC = Path.of("../../docs/testing.md");
    private static final Path EXAMPLE = Path.of("src/test/java/dev/dlock/boot/stubbed/OrderServiceTest.java");

    @Test
    void theDocShowsTheTestedExample() throws IOException {
        String source = Files.readString(EXAMPLE);
        String example = source.substring(source.indexOf("// docs/testing.md: begin") + "// docs/testing.md: begin".length(),
                source.indexOf("// docs/testing.md: end")).strip();
        assertThat(Files.readString(DOC)).contains("```java\n" + example + "\n```");
    }
}
