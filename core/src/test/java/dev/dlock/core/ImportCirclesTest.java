package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import org.junit.jupiter.api.Test;

/**
 * No circle of references in core's sources runs through two packages: the engine ({@code dev.dlock.core}) uses the
 * store SPI ({@code dev.dlock.core.spi}), which may use the engine's plain types (a lock kind, an exception) but
 * nothing that leads back to the SPI, and the in-memory store uses both. A reference is an import, a fully qualified
 * name, a class of the same package named in code, or one a Javadoc {@code @link}, {@code @see} or {@code @throws}
 * names (an import kept for Javadoc is an import all the same). Read from the source files, so no dependency and no
 * bytecode: a circle inside one package (the engine's classes call each other) is allowed.
 */
class ImportCirclesTest {

    private static final Path SOURCES = Path.of("src", "main", "java");
    private static final Pattern PACKAGE = Pattern.compile("^package\\s+([\\w.]+)\\s*;", Pattern.MULTILINE);
    private static final Pattern IMPORT = Pattern.compile("^import\\s+(static\\s+)?([\\w.]+)(\\.\\*)?\\s*;", Pattern.MULTILINE);
    private static final Pattern QUALIFIED = Pattern.compile("\\b(dev\\.dlock(?:\\.[a-z]\\w*)*)\\.([A-Z]\\w*)");
    private static final Pattern DOC_REFERENCE = Pattern.compile("(?:\\{@link(?:plain)?|@see|@throws)\\s+([\\w.]+)");
    private static final Pattern COMMENT_OR_TEXT = Pattern.compile(
            "/\\*.*?\\*/|//[^\\n]*|\"\"\"(?:.|\\n)*?\"\"\"|\"(?:\\\\.|[^\"\\\\])*\"|'(?:\\\\.|[^'\\\\])*'", Pattern.DOTALL);
    private static final Pattern IDENTIFIER = Pattern.compile("\\b[A-Z]\\w*\\b");

    @Test
    void noCircleOfCoresSourcesRunsThroughTwoPackages() {
        Map<String, String> sources = readSources(SOURCES);
        assertThat(sources).as("core's sources, read from %s", SOURCES.toAbsolutePath()).hasSizeGreaterThan(40);
        assertThat(circlesAcrossPackages(sources)).as("circles of references through more than one package").isEmpty();
    }

    @Test
    void theCheckFindsACircleThroughTheSpi() {
        // The two circles this test was written against: a Javadoc import of the SPI's record from an engine type that
        // the record names, and the SPI naming the manager that uses it.
        Map<String, String> sources = new LinkedHashMap<>();
        sources.put("dev.dlock.core.LockKind", """
                package dev.dlock.core;
                import dev.dlock.core.spi.BackendCapabilities;
                /** Stores say which kinds they take ({@link BackendCapabilities#modes()}). */
                public final class LockKind {
                }
                """);
        sources.put("dev.dlock.core.spi.BackendCapabilities", """
                package dev.dlock.core.spi;
                import dev.dlock.core.LockKind;
                public record BackendCapabilities(java.util.Set<LockKind> modes) {
                }
                """);
        sources.put("dev.dlock.core.spi.LockBackend", """
                package dev.dlock.core.spi;
                /** Used only by {@link dev.dlock.core.LockManager}. */
                public interface LockBackend {
                }
                """);
        sources.put("dev.dlock.core.LockManager", """
                package dev.dlock.core;
                import dev.dlock.core.spi.LockBackend;
                public final class LockManager {
                    private LockBackend backend;
                    // a mention of Lease in a comment is no reference
                    private String text = "Lease";
                }
                """);
        sources.put("dev.dlock.core.Lease", """
                package dev.dlock.core;
                final class Lease {
                    LockManager manager;
                }
                """);

        assertThat(circlesAcrossPackages(sources)).containsExactlyInAnyOrder(
                List.of("dev.dlock.core.LockKind", "dev.dlock.core.spi.BackendCapabilities"),
                List.of("dev.dlock.core.LockManager", "dev.dlock.core.spi.LockBackend"));
    }

    /** Every strongly connected set of classes that spans two packages or more, each sorted by name. */
    static List<List<String>> circlesAcrossPackages(Map<String, String> sources) {
        Map<String, Set<String>> references = references(sources);
        List<List<String>> circles = new ArrayList<>();
        for (List<String> component : stronglyConnected(references)) {
            if (component.stream().map(ImportCirclesTest::packageOf).distinct().count() > 1) {
                circles.add(component.stream().sorted().toList());
            }
        }
        return circles;
    }

    /** Which classes of {@code sources} each one refers to (by fully qualified name of its file's top-level type). */
    private static Map<String, Set<String>> references(Map<String, String> sources) {
        Map<String, Set<String>> classesByPackage = new HashMap<>();
        for (String type : sources.keySet()) {
            classesByPackage.computeIfAbsent(packageOf(type), p -> new LinkedHashSet<>()).add(simpleName(type));
        }
        Map<String, Set<String>> references = new TreeMap<>();
        sources.forEach((type, source) -> {
            String pkg = packageOf(type);
            Set<String> targets = new LinkedHashSet<>();
            Matcher imports = IMPORT.matcher(source);
            while (imports.find()) {
                String imported = imports.group(2);
                if (imports.group(3) != null) {
                    classesByPackage.getOrDefault(imported, Set.of()).forEach(name -> targets.add(imported + "." + name));
                } else {
                    targets.add(imports.group(1) != null ? imported.substring(0, imported.lastIndexOf('.')) : imported);
                }
            }
            Matcher qualified = QUALIFIED.matcher(source);
            while (qualified.find()) {
                targets.add(qualified.group(1) + "." + qualified.group(2));
            }
            Set<String> samePackage = classesByPackage.get(pkg);
            Matcher docs = DOC_REFERENCE.matcher(source);
            while (docs.find()) {
                String name = docs.group(1);
                if (samePackage.contains(name)) {
                    targets.add(pkg + "." + name);
                }
            }
            Matcher identifiers = IDENTIFIER.matcher(COMMENT_OR_TEXT.matcher(withoutHeader(source)).replaceAll(" "));
            while (identifiers.find()) {
                if (samePackage.contains(identifiers.group())) {
                    targets.add(pkg + "." + identifiers.group());
                }
            }
            targets.remove(type);
            targets.retainAll(sources.keySet());
            references.put(type, targets);
        });
        return references;
    }

    /** The source after its package and import lines. */
    private static String withoutHeader(String source) {
        return IMPORT.matcher(PACKAGE.matcher(source).replaceAll(" ")).replaceAll(" ");
    }

    /** Tarjan's strongly connected components with more than one class (a class alone is no circle). */
    private static List<List<String>> stronglyConnected(Map<String, Set<String>> graph) {
        Map<String, Integer> index = new HashMap<>();
        Map<String, Integer> low = new HashMap<>();
        Deque<String> stack = new ArrayDeque<>();
        Set<String> onStack = new LinkedHashSet<>();
        List<List<String>> components = new ArrayList<>();
        int[] counter = {0};
        for (String node : graph.keySet()) {
            if (!index.containsKey(node)) {
                connect(node, graph, index, low, stack, onStack, components, counter);
            }
        }
        return components;
    }

    private static void connect(String node, Map<String, Set<String>> graph, Map<String, Integer> index,
                                Map<String, Integer> low, Deque<String> stack, Set<String> onStack,
                                List<List<String>> components, int[] counter) {
        index.put(node, counter[0]);
        low.put(node, counter[0]);
        counter[0]++;
        stack.push(node);
        onStack.add(node);
        for (String next : graph.getOrDefault(node, Set.of())) {
            if (!index.containsKey(next)) {
                connect(next, graph, index, low, stack, onStack, components, counter);
                low.put(node, Math.min(low.get(node), low.get(next)));
            } else if (onStack.contains(next)) {
                low.put(node, Math.min(low.get(node), index.get(next)));
            }
        }
        if (low.get(node).equals(index.get(node))) {
            List<String> component = new ArrayList<>();
            String member;
            do {
                member = stack.pop();
                onStack.remove(member);
                component.add(member);
            } while (!member.equals(node));
            if (component.size() > 1) {
                components.add(component);
            }
        }
    }

    /** The sources under {@code root}, by the fully qualified name of each file's top-level type. */
    private static Map<String, String> readSources(Path root) {
        Map<String, String> sources = new TreeMap<>();
        try (Stream<Path> files = Files.walk(root)) {
            for (Path file : files.filter(path -> path.toString().endsWith(".java")).toList()) {
                String source = Files.readString(file);
                Matcher pkg = PACKAGE.matcher(source);
                String name = file.getFileName().toString().replace(".java", "");
                if (pkg.find() && !name.equals("package-info")) {
                    sources.put(pkg.group(1) + "." + name, source);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return sources;
    }

    private static String packageOf(String type) {
        return type.substring(0, type.lastIndexOf('.'));
    }

    private static String simpleName(String type) {
        return type.substring(type.lastIndexOf('.') + 1);
    }
}
