package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.context.annotation.ImportCandidates;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.core.annotation.MergedAnnotations;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

import javax.xml.parsers.DocumentBuilderFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A store is added to the auto-configuration by one {@link Store} constant; what cannot be derived from it — Boot's
 * {@code AutoConfiguration.imports}, the store's auto-configuration and its starters — must agree with it.
 */
class StoreModulesTest {

    @Test
    void everyStoresAutoConfigurationIsListedInAutoConfigurationImports() {
        List<String> imports = new ArrayList<>();
        ImportCandidates.load(AutoConfiguration.class, getClass().getClassLoader()).forEach(imports::add);
        for (Store store : storesWithAModule()) {
            assertThat(imports).as("AutoConfiguration.imports lists the auto-configuration of %s", store)
                    .contains(store.module().autoConfiguration());
        }
    }

    @Test
    void everyStoresAutoConfigurationIsConditionalOnThatStoreAndOnItsModulesClasses() throws Exception {
        for (Store store : storesWithAModule()) {
            Class<?> configuration = Class.forName(store.module().autoConfiguration());
            MergedAnnotations annotations = MergedAnnotations.from(configuration);
            assertThat(annotations.get(ConditionalOnLockStore.class).getEnum("value", Store.class))
                    .as("@ConditionalOnLockStore of %s", configuration.getSimpleName()).isEqualTo(store);
            assertThat(Arrays.stream(annotations.get(ConditionalOnClass.class).getClassArray("value")).map(Class::getName))
                    .as("@ConditionalOnClass of %s", configuration.getSimpleName())
                    .containsExactlyInAnyOrderElementsOf(store.module().markers());
            assertThat(configuration.getAnnotation(AutoConfiguration.class)).as("%s is an auto-configuration", configuration).isNotNull();
        }
    }

    @Test
    void everyStoresPropertiesClassBindsItsPrefix() {
        for (Store store : storesWithAModule()) {
            assertThat(MergedAnnotations.from(store.module().properties()).get(ConfigurationProperties.class).getString("prefix"))
                    .as("prefix of %s", store.module().properties().getSimpleName()).isEqualTo(store.module().propertiesPrefix());
        }
        assertThat(Store.IN_MEMORY.module().exists()).as("the in-memory store has a module of its own").isFalse();
    }

    /** The starters the no-store message names exist on both Boot lines (spring-boot/starters/*). */
    @Test
    void theStartersNamedInMessagesExist() throws Exception {
        List<String> starters = new ArrayList<>();
        try (Stream<Path> poms = Files.list(Path.of("..", "starters"))) {
            for (Path pom : poms.map(dir -> dir.resolve("pom.xml")).filter(Files::exists).toList()) {
                Element project = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile()).getDocumentElement();
                for (Node node = project.getFirstChild(); node != null; node = node.getNextSibling()) {
                    if (node instanceof Element element && element.getTagName().equals("artifactId")) {
                        starters.add("dev.dlock:" + element.getTextContent().trim());
                    }
                }
            }
        }
        for (Store store : storesWithAModule()) {
            assertThat(starters).as("starters of %s", store).contains(store.module().starter("4.1.1"), store.module().starter("3.5.7"));
        }
    }

    private static List<Store> storesWithAModule() {
        List<Store> stores = Arrays.stream(Store.values()).filter(store -> store.module().exists()).toList();
        assertThat(stores).hasSizeGreaterThanOrEqualTo(4);
        return stores;
    }
}
