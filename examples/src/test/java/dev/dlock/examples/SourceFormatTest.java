package dev.dlock.examples;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The build checks the project's one formatter configuration, {@code .editorconfig}: every source and text file is
 * UTF-8 with LF line ends, a final newline and no trailing blanks; Java, Kotlin and XML indent with spaces; Java and
 * Kotlin lines fit {@code max_line_length}. A failure names each file and line.
 */
class SourceFormatTest {

    private static final Path ROOT = Path.of("..");
    private static final Set<String> TEXT = Set.of("java", "kt", "xml", "md", "yml", "yaml", "properties", "lua", "sql",
            "json", "dot", "imports", "factories", "config", "sh");
    private static final Set<String> SKIPPED_FOLDERS = Set.of(".git", "target", "node_modules", ".idea");

    @Test
    void everyFileFollowsTheEditorConfig() throws IOException {
        int maxLineLength = maxLineLength();
        List<String> problems = new ArrayList<>();
        List<Path> files = textFiles();
        for (Path file : files) {
            String name = ROOT.relativize(file).toString();
            String text;
            try {
                text = StandardCharsets.UTF_8.newDecoder().onMalformedInput(CodingErrorAction.REPORT)
                        .decode(ByteBuffer.wrap(Files.readAllBytes(file))).toString();
            } catch (CharacterCodingException e) {
                problems.add(name + ": not UTF-8");
                continue;
            }
            if (text.indexOf('\r') >= 0) {
                problems.add(name + ": CR line ends");
            }
            if (!text.isEmpty() && !text.endsWith("\n")) {
                problems.add(name + ": no final newline");
            }
            String extension = extension(file);
            boolean code = extension.equals("java") || extension.equals("kt");
            String[] lines = text.split("\n", -1);
            for (int i = 0; i < lines.length; i++) {
                String line = lines[i];
                if (!line.isEmpty() && Character.isWhitespace(line.charAt(line.length() - 1))) {
                    problems.add(name + ":" + (i + 1) + ": trailing blank");
                }
                if ((code || extension.equals("xml")) && line.indexOf('\t') >= 0) {
                    problems.add(name + ":" + (i + 1) + ": tab");
                }
                if (code && line.length() > maxLineLength) {
                    problems.add(name + ":" + (i + 1) + ": " + line.length() + " characters (max_line_length " + maxLineLength + ")");
                }
            }
        }
        assertThat(files).as("files checked").hasSizeGreaterThan(500);
        assertThat(problems).as("departures from .editorconfig").isEmpty();
    }

    /** The Java and Kotlin line limit, read from {@code .editorconfig} itself so that the two cannot disagree. */
    private static int maxLineLength() throws IOException {
        boolean inCodeSection = false;
        for (String line : Files.readAllLines(ROOT.resolve(".editorconfig"))) {
            String trimmed = line.strip();
            if (trimmed.startsWith("[")) {
                inCodeSection = trimmed.equals("[*.{java,kt}]");
            } else if (inCodeSection && trimmed.startsWith("max_line_length")) {
                return Integer.parseInt(trimmed.substring(trimmed.indexOf('=') + 1).strip());
            }
        }
        throw new AssertionError(".editorconfig has no max_line_length for [*.{java,kt}]");
    }

    private static List<Path> textFiles() throws IOException {
        try (Stream<Path> walk = Files.walk(ROOT)) {
            return walk.filter(Files::isRegularFile)
                    .filter(file -> {
                        for (Path part : ROOT.relativize(file)) {
                            if (SKIPPED_FOLDERS.contains(part.toString())) {
                                return false;
                            }
                        }
                        return true;
                    })
                    .filter(file -> TEXT.contains(extension(file)))
                    .sorted()
                    .toList();
        }
    }

    private static String extension(Path file) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        return dot < 0 ? "" : name.substring(dot + 1);
    }
}
