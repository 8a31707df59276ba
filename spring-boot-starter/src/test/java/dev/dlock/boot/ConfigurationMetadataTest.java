package dev.dlock.boot;

import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanUtils;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.json.JsonParserFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collection;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The defaults an IDE shows (the jar's configuration metadata) are the values dlock uses when a property is not set. */
class ConfigurationMetadataTest {

    /** The stores' properties classes, by prefix. */
    private static final Map<String, Class<?>> STORE_PROPERTIES = Map.of(
            ZooKeeperStoreProperties.PREFIX, ZooKeeperStoreProperties.class,
            JdbcStoreProperties.PREFIX, JdbcStoreProperties.class,
            MemcachedStoreProperties.PREFIX, MemcachedStoreProperties.class);

    @Test
    void everyDefaultOfDlockIsInTheMetadataAndBindsToTheSameValue() throws Exception {
        List<Map<String, Object>> properties = dlockProperties();
        assertThat(properties).as("dlock properties in the metadata").isNotEmpty();
        SoftAssertions softly = new SoftAssertions();
        for (Map<String, Object> property : properties) {
            String name = (String) property.get("name");
            // A store's own settings bind to a properties class of their own.
            String prefix = STORE_PROPERTIES.keySet().stream().filter(p -> name.startsWith(p + ".")).findFirst()
                    .orElse(DistributedLockProperties.PREFIX);
            Class<?> type = STORE_PROPERTIES.getOrDefault(prefix, DistributedLockProperties.class);
            BeanWrapperImpl defaults = new BeanWrapperImpl(BeanUtils.instantiateClass(type));
            String path = beanPath(prefix, name);
            Object actual = defaults.getPropertyValue(path);
            if (actual == null || actual instanceof Collection<?> collection && collection.isEmpty()) {
                continue; // no default of dlock's own: the client's (timeout) or nothing (url, nodes)
            }
            Object documented = property.get("defaultValue");
            softly.assertThat(documented).as("defaultValue of %s in the metadata (dlock uses %s)", name, actual).isNotNull();
            if (documented != null) {
                Object bound = new Binder(new MapConfigurationPropertySource(Map.of(name, String.valueOf(documented))))
                        .bindOrCreate(prefix, type);
                softly.assertThat(new BeanWrapperImpl(bound).getPropertyValue(path))
                        .as("%s bound from the documented default '%s'", name, documented).isEqualTo(actual);
            }
        }
        softly.assertAll();
    }

    /** The dlock entries of the metadata the build generated for this module. */
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> dlockProperties() throws Exception {
        Path classes = Path.of(DistributedLockProperties.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String json = Files.readString(classes.resolve("META-INF/spring-configuration-metadata.json"));
        List<Map<String, Object>> all = (List<Map<String, Object>>) JsonParserFactory.getJsonParser().parseMap(json).get("properties");
        return all.stream().filter(p -> ((String) p.get("name")).startsWith(DistributedLockProperties.PREFIX + ".")).toList();
    }

    /** {@code dlock.watchdog.batch-size} under {@code dlock} to {@code watchdog.batchSize}. */
    private static String beanPath(String prefix, String name) {
        String relative = name.substring(prefix.length() + 1);
        StringBuilder path = new StringBuilder();
        boolean upper = false;
        for (char c : relative.toCharArray()) {
            if (c == '-') {
                upper = true;
            } else {
                path.append(upper ? Character.toUpperCase(c) : c);
                upper = false;
            }
        }
        return path.toString();
    }
}
