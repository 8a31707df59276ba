package dev.dlock.boot;

import dev.dlock.redis.RedisLockBackend;
import org.assertj.core.api.SoftAssertions;
import org.junit.jupiter.api.Test;
import org.springframework.beans.BeanUtils;
import org.springframework.boot.actuate.endpoint.Access;
import org.springframework.beans.BeanWrapperImpl;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;
import org.springframework.boot.convert.ApplicationConversionService;
import org.springframework.boot.json.JsonParserFactory;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/** The defaults an IDE shows (the jar's configuration metadata) are the values dlock uses when a property is not set. */
class ConfigurationMetadataTest {

    /** The stores' properties classes, by prefix. */
    private static final Map<String, Class<?>> STORE_PROPERTIES = Arrays.stream(DistributedLockProperties.Store.values())
            .map(DistributedLockProperties.Store::module).filter(StoreModule::exists)
            .collect(Collectors.toMap(StoreModule::propertiesPrefix, StoreModule::properties));

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

    /** The Redis store's property names as users write them since 0.1.0; they must not change when classes move. */
    private static final List<String> REDIS_PROPERTY_NAMES = List.of(
            "dlock.redis.url", "dlock.redis.timeout", "dlock.redis.username", "dlock.redis.password", "dlock.redis.ssl",
            "dlock.redis.ssl-bundle", "dlock.redis.ssl-verify-hostname", "dlock.redis.key-prefix",
            "dlock.redis.fair-waiter-timeout", "dlock.redis.coalesce-round-trips", "dlock.redis.sentinel.master",
            "dlock.redis.sentinel.nodes", "dlock.redis.sentinel.username", "dlock.redis.sentinel.password",
            "dlock.redis.cluster.nodes", "dlock.redis.redlock.nodes");

    /**
     * The Redis settings live in the Redis store's own properties class, not the store-neutral one, under the
     * names users already write; the deprecated {@code dlock.key-prefix} still points to its replacement.
     */
    @Test
    void redisSettingsKeepTheirNamesInTheRedisStoresOwnClass() throws Exception {
        Map<String, Map<String, Object>> byName = dlockProperties().stream()
                .collect(Collectors.toMap(p -> (String) p.get("name"), p -> p));
        assertThat(byName.keySet().stream().filter(name -> name.startsWith(RedisStoreProperties.PREFIX + ".")))
                .containsExactlyInAnyOrderElementsOf(REDIS_PROPERTY_NAMES);
        SoftAssertions softly = new SoftAssertions();
        for (String name : REDIS_PROPERTY_NAMES) {
            softly.assertThat((String) byName.get(name).get("sourceType")).as("class that binds %s", name)
                    .startsWith(RedisStoreProperties.class.getName());
        }
        softly.assertAll();
        assertThat(Arrays.stream(DistributedLockProperties.class.getDeclaredClasses()).map(Class::getSimpleName))
                .as("nested classes of the store-neutral properties").doesNotContain("Redis", "Sentinel", "Cluster", "Redlock");
        assertThat(byName.get("dlock.key-prefix").get("deprecation")).asString().contains("dlock.redis.key-prefix");
    }

    /**
     * The endpoint's access is Spring Boot's {@code management.endpoint.dlock.access}, read-only unless the application
     * says otherwise; the former switch of the forced release points to it.
     */
    @Test
    @SuppressWarnings("unchecked")
    void theEndpointsAccessIsBootsPropertyReadOnlyByDefaultAndTheOldSwitchPointsToIt() throws Exception {
        Map<String, Map<String, Object>> byName = ((List<Map<String, Object>>) metadata().get("properties")).stream()
                .collect(Collectors.toMap(p -> (String) p.get("name"), p -> p, (first, second) -> first));

        assertThat(byName).containsKey("management.endpoint.dlock.access");
        assertThat(convert(byName.get("management.endpoint.dlock.access").get("defaultValue"), Access.class))
                .as("default of management.endpoint.dlock.access").isEqualTo(Access.READ_ONLY);
        assertThat(byName.get("dlock.admin.force-release.enabled")).containsEntry("deprecated", true);
        assertThat(byName.get("dlock.admin.force-release.enabled").get("deprecation")).asString()
                .contains("management.endpoint.dlock.access");
    }

    /** The JDBC store's schema switch follows Boot's initialize-schema convention; the old switch points to it. */
    @Test
    void createSchemaIsDeprecatedForBootsInitializeSchemaConvention() throws Exception {
        Map<String, Map<String, Object>> byName = dlockProperties().stream()
                .collect(Collectors.toMap(p -> (String) p.get("name"), p -> p));
        assertThat(byName.get("dlock.jdbc.initialize-schema").get("type"))
                .isEqualTo("org.springframework.boot.sql.init.DatabaseInitializationMode");
        assertThat(byName.get("dlock.jdbc.initialize-schema").get("defaultValue")).isEqualTo("embedded");
        assertThat(byName.get("dlock.jdbc.create-schema").get("deprecation")).asString()
                .contains("replacement=dlock.jdbc.initialize-schema");
    }

    /** A default the store owns (not the properties class) is documented as the store's own value. */
    @Test
    void defaultsOfTheRedisStoreAreDocumentedAsItsOwn() throws Exception {
        Map<String, Map<String, Object>> byName = dlockProperties().stream()
                .collect(Collectors.toMap(p -> (String) p.get("name"), p -> p));
        Object fairWaiterTimeout = byName.get("dlock.redis.fair-waiter-timeout").get("defaultValue");
        assertThat(fairWaiterTimeout).as("defaultValue of dlock.redis.fair-waiter-timeout").isNotNull();
        assertThat(convert(fairWaiterTimeout, Duration.class)).isEqualTo(RedisLockBackend.DEFAULT_FAIR_WAITER_TIMEOUT);
        assertThat(byName.get("dlock.redis.key-prefix").get("defaultValue")).isEqualTo(RedisLockBackend.DEFAULT_KEY_PREFIX);
    }

    /**
     * What an IDE offers as values: every constant of an enum property and typical values of every duration,
     * each with a description, each a value the property binds.
     */
    @Test
    @SuppressWarnings("unchecked")
    void enumAndDurationPropertiesHaveValueHintsThatBind() throws Exception {
        Map<String, List<Map<String, Object>>> hints = ((List<Map<String, Object>>) metadata().get("hints")).stream()
                .collect(Collectors.toMap(h -> (String) h.get("name"), h -> (List<Map<String, Object>>) h.get("values")));
        SoftAssertions softly = new SoftAssertions();
        for (Map<String, Object> property : dlockProperties()) {
            String name = (String) property.get("name");
            String typeName = (String) property.get("type");
            Class<?> type = typeName.contains("<") ? Collection.class : Class.forName(typeName);
            if (type != Duration.class && !type.isEnum()) {
                continue;
            }
            List<Map<String, Object>> values = hints.get(name);
            softly.assertThat(values).as("value hints of %s", name).isNotEmpty();
            if (values == null) {
                continue;
            }
            for (Map<String, Object> value : values) {
                softly.assertThat((String) value.get("description")).as("description of %s=%s", name, value.get("value")).isNotBlank();
                softly.assertThat(convert(value.get("value"), type)).as("%s=%s binds", name, value.get("value")).isNotNull();
            }
            if (type.isEnum()) {
                softly.assertThat(values.stream().map(value -> convert(value.get("value"), type)).toList())
                        .as("every constant of %s is offered for %s", type.getSimpleName(), name)
                        .containsExactlyInAnyOrderElementsOf(Arrays.asList(type.getEnumConstants()));
            }
        }
        softly.assertAll();
    }

    private static Object convert(Object value, Class<?> type) {
        return ApplicationConversionService.getSharedInstance().convert(Objects.toString(value), type);
    }

    /** The dlock entries of the metadata the build generated for this module. */
    @SuppressWarnings("unchecked")
    private static List<Map<String, Object>> dlockProperties() throws Exception {
        List<Map<String, Object>> all = (List<Map<String, Object>>) metadata().get("properties");
        return all.stream().filter(p -> ((String) p.get("name")).startsWith(DistributedLockProperties.PREFIX + ".")).toList();
    }

    /** The metadata the build generated for this module (with additional-spring-configuration-metadata.json merged). */
    private static Map<String, Object> metadata() throws Exception {
        Path classes = Path.of(DistributedLockProperties.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String json = Files.readString(classes.resolve("META-INF/spring-configuration-metadata.json"));
        return JsonParserFactory.getJsonParser().parseMap(json);
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
