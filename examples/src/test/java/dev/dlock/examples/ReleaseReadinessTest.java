package dev.dlock.examples;

import org.junit.jupiter.api.Test;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;
import org.w3c.dom.NodeList;

import javax.xml.parsers.DocumentBuilderFactory;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What a user adopting dlock relies on beyond the code: the BOM lists exactly the published modules at
 * the reactor's version, unpublished modules are never deployed, and the README stays a short entry
 * point that links every doc page, none of which cites the project's internal issue numbers.
 */
class ReleaseReadinessTest {

    private static final Path ROOT = Path.of("..");

    @Test
    void theBomListsEveryPublishedModuleAtTheReactorVersion() throws Exception {
        Document root = parse(ROOT.resolve("pom.xml"));
        String version = child(root.getDocumentElement(), "version");
        Set<String> published = new TreeSet<>();
        Set<String> unpublished = new TreeSet<>();
        NodeList modules = root.getElementsByTagName("module");
        for (int i = 0; i < modules.getLength(); i++) {
            String module = modules.item(i).getTextContent().trim();
            if (module.equals("bom")) {
                continue;
            }
            Element pom = parse(ROOT.resolve(module).resolve("pom.xml")).getDocumentElement();
            String artifactId = child(pom, "artifactId");
            boolean skipsDeploy = pom.getElementsByTagName("maven.deploy.skip").getLength() > 0
                    && "true".equals(pom.getElementsByTagName("maven.deploy.skip").item(0).getTextContent().trim());
            (skipsDeploy ? unpublished : published).add(artifactId);
        }

        Element bom = parse(ROOT.resolve("bom/pom.xml")).getDocumentElement();
        assertThat(child(bom, "version")).as("dlock-bom's version").isEqualTo(version);
        assertThat(bom.getElementsByTagName("parent").getLength()).as("dlock-bom has no parent").isZero();
        Set<String> listed = new TreeSet<>();
        NodeList dependencies = bom.getElementsByTagName("dependency");
        for (int i = 0; i < dependencies.getLength(); i++) {
            Element dependency = (Element) dependencies.item(i);
            assertThat(child(dependency, "groupId")).isEqualTo("dev.dlock");
            assertThat(child(dependency, "version")).isEqualTo("${project.version}");
            listed.add(child(dependency, "artifactId"));
        }
        assertThat(listed).as("artifacts in dlock-bom").isEqualTo(published);
        assertThat(unpublished).as("modules that skip deploy")
                .contains("dlock-examples", "dlock-benchmarks", "dlock-aspect-tests", "dlock-boot-tests-boot4");
    }

    /** Folder and artifact id differ only by the rules docs/modules.md gives ("Names"). */
    @Test
    void everyArtifactIdFollowsTheNamingRuleOfItsFolder() throws Exception {
        NodeList modules = parse(ROOT.resolve("pom.xml")).getElementsByTagName("module");
        assertThat(modules.getLength()).isGreaterThan(30);
        for (int i = 0; i < modules.getLength(); i++) {
            String module = modules.item(i).getTextContent().trim();
            String artifactId = child(parse(ROOT.resolve(module).resolve("pom.xml")).getDocumentElement(), "artifactId");
            assertThat(artifactId).as("artifact id of %s (docs/modules.md, Names)", module).isIn(namedAfter(module));
        }
    }

    /** The artifact ids the naming rules of docs/modules.md allow for {@code folder}. */
    private static List<String> namedAfter(String folder) {
        String last = folder.substring(folder.lastIndexOf('/') + 1);
        if (folder.endsWith("-backend")) {
            return List.of("dlock-" + folder.substring(0, folder.length() - "-backend".length()));
        }
        if (folder.equals("aspect-runtime")) {
            return List.of("dlock-spring");
        }
        if (folder.startsWith("spring-boot/")) {
            String line = folder.endsWith("boot3") ? "3" : "";
            String store = folder.startsWith("spring-boot/starters/") ? last.replace("-boot3", "") + "-" : "";
            return List.of("dlock-" + store + "spring-boot" + line + "-starter");
        }
        if (folder.startsWith("spring-integration/si")) {
            String version = last.substring("si".length());
            return List.of("dlock-spring-integration" + (version.equals("7") ? "" : version));
        }
        if (folder.startsWith("integration-tests/")) {
            return List.of("dlock-" + last + "-tests", "dlock-boot-tests-" + last);
        }
        return List.of("dlock-" + last);
    }

    @Test
    void theTreeIsTheDesignCardsAndNoStoreDependsOnSpringOrAspectJ() throws Exception {
        Set<String> folders = new TreeSet<>();
        try (Stream<Path> top = Files.list(ROOT)) {
            top.filter(Files::isDirectory).map(dir -> dir.getFileName().toString())
                    .filter(name -> !name.startsWith(".") && !name.equals("target")).forEach(folders::add);
        }
        assertThat(folders).as("top-level folders (docs/modules.md)").containsExactlyInAnyOrder("annotations", "core",
                "aspect-runtime", "fencing", "redis-backend", "jdbc-backend", "zookeeper-backend", "memcached-backend", "spring-boot",
                "testing", "integration-tests", "examples", "benchmarks", "bom", "docs",
                "shedlock", "spring-integration");

        for (String store : List.of("core", "redis-backend", "jdbc-backend", "zookeeper-backend", "memcached-backend")) {
            NodeList dependencies = parse(ROOT.resolve(store).resolve("pom.xml")).getElementsByTagName("dependency");
            for (int i = 0; i < dependencies.getLength(); i++) {
                Element dependency = (Element) dependencies.item(i);
                String coordinates = child(dependency, "groupId") + ":" + child(dependency, "artifactId");
                assertThat(coordinates).as(store + " depends on " + coordinates)
                        .doesNotStartWith("org.springframework").doesNotStartWith("org.aspectj");
                if (coordinates.startsWith("dev.dlock:") && !coordinates.equals("dev.dlock:dlock-core")) {
                    assertThat(child(dependency, "scope")).as(store + "'s dependency on " + coordinates).isEqualTo("test");
                }
            }
        }
    }

    @Test
    void theReadmeIsShortAndEveryDocPageIsReachableFromIt() throws IOException {
        Path readme = ROOT.resolve("README.md");
        assertThat(Files.size(readme)).as("README.md bytes").isLessThanOrEqualTo(12 * 1024);
        Pattern link = Pattern.compile("\\]\\(([^)#\\s:]+\\.md)(#[^)]*)?\\)");
        Set<Path> reached = new TreeSet<>();
        Deque<Path> pending = new ArrayDeque<>(List.of(readme.normalize()));
        while (!pending.isEmpty()) {
            Path page = pending.pop();
            if (!reached.add(page) || !Files.exists(page)) {
                continue;
            }
            Matcher matcher = link.matcher(Files.readString(page));
            while (matcher.find()) {
                pending.push(page.resolveSibling(matcher.group(1)).normalize());
            }
        }
        for (Path page : docPages()) {
            assertThat(reached).as("pages reachable from README.md").contains(page.normalize());
        }
    }

    @Test
    void noPageCitesAnIssueNumber() throws IOException {
        Pattern issueNumber = Pattern.compile("(?i)\\bissues? ?#?\\d+|(?<![\\w&/])#\\d+\\b");
        List<String> citations = new ArrayList<>();
        List<Path> pages = new ArrayList<>(docPages());
        pages.add(ROOT.resolve("README.md"));
        pages.add(ROOT.resolve("CHANGELOG.md"));
        for (Path page : pages) {
            Matcher matcher = issueNumber.matcher(Files.readString(page));
            while (matcher.find()) {
                citations.add(ROOT.relativize(page) + ": " + matcher.group());
            }
        }
        assertThat(citations).as("issue numbers cited").isEmpty();
    }

    private static List<Path> docPages() throws IOException {
        try (Stream<Path> files = Files.walk(ROOT.resolve("docs"))) {
            return files.filter(file -> file.toString().endsWith(".md")).sorted().toList();
        }
    }

    private static Document parse(Path pom) throws Exception {
        return DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
    }

    /** The text of a direct child element, or null. */
    private static String child(Element parent, String name) {
        for (Node node = parent.getFirstChild(); node != null; node = node.getNextSibling()) {
            if (node instanceof Element element && element.getTagName().equals(name)) {
                return element.getTextContent().trim();
            }
        }
        return null;
    }
}
