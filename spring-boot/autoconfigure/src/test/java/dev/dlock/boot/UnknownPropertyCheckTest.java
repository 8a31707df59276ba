package dev.dlock.boot;

import org.junit.jupiter.api.Test;
import org.springframework.boot.json.JsonParserFactory;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** Which {@code dlock.*} names the startup check takes for typos: none that dlock documents, every one it does not. */
class UnknownPropertyCheckTest {

    /** Every property of the configuration metadata (what an IDE offers) is known, whatever its value. */
    @Test
    @SuppressWarnings("unchecked")
    void everyDocumentedPropertyIsKnown() throws Exception {
        Path classes = Path.of(DistributedLockProperties.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        String json = Files.readString(classes.resolve("META-INF/spring-configuration-metadata.json"));
        List<Map<String, Object>> all = (List<Map<String, Object>>) JsonParserFactory.getJsonParser().parseMap(json).get("properties");
        Map<String, Object> everyOne = new LinkedHashMap<>();
        for (Map<String, Object> property : all) {
            everyOne.put((String) property.get("name"), "not-a-valid-value-for-most");
        }
        assertThat(everyOne).hasSizeGreaterThan(30);
        assertThat(UnknownPropertyCheck.unknown(environment(everyOne))).isEmpty();
    }

    @Test
    void relaxedNamesAndListElementsAreKnown() {
        assertThat(UnknownPropertyCheck.unknown(environment(Map.of(
                "dlock.redis.keyPrefix", "app:",
                "dlock.watchdog.batch_size", "5",
                "dlock.redis.cluster.nodes[0]", "h:1",
                "dlock.redis.sentinel.nodes[1]", "h:2",
                "dlock.jdbc.table-name", "locks",
                "dlock.zookeeper.base-path", "/x")))).isEmpty();
    }

    @Test
    void typosAreNamedWithWhereTheyCameFrom() {
        assertThat(UnknownPropertyCheck.unknown(environment(Map.of("dlock.redis.ulr", "redis://x", "dlock.redis.url", "redis://y"))))
                .singleElement().asString().startsWith("dlock.redis.ulr").contains("test properties");
    }

    /** A DLOCK_* environment variable or a -Ddlock.* flag may belong to another tool (dlock's own test harnesses have some): not checked. */
    @Test
    void environmentVariablesAndSystemPropertiesAreNotChecked() {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().replace(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                new SystemEnvironmentPropertySource(StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME,
                        Map.of("DLOCK_HOME", "/opt/dlock")));
        environment.getPropertySources().replace(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME,
                new MapPropertySource(StandardEnvironment.SYSTEM_PROPERTIES_PROPERTY_SOURCE_NAME,
                        Map.of("dlock.expected.boot.line", "4.1.")));
        assertThat(UnknownPropertyCheck.unknown(environment)).isEmpty();
    }

    /**
     * A store whose properties class needs its module (JDBC, memcached) has its names checked only with the module:
     * without it they are left alone, as no class can bind them.
     */
    @Test
    void theNamesOfAStoreWhoseModuleIsMissingAreLeftAlone() {
        Map<String, Object> properties = Map.of("dlock.jdbc.table-nmae", "locks", "dlock.memcached.servres", "h:1");
        FilteredClassLoader withoutStores = new FilteredClassLoader("dev.dlock.jdbc.", "dev.dlock.memcached.");
        assertThat(UnknownPropertyCheck.unknown(environment(properties), withoutStores)).isEmpty();
        assertThat(UnknownPropertyCheck.unknown(environment(properties), getClass().getClassLoader()))
                .hasSize(2).anySatisfy(name -> assertThat(name).startsWith("dlock.jdbc.table-nmae"))
                .anySatisfy(name -> assertThat(name).startsWith("dlock.memcached.servres"));
    }

    private static StandardEnvironment environment(Map<String, Object> properties) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addFirst(new MapPropertySource("test properties", properties));
        return environment;
    }

    /**
     * A misspelt name gets Spring Boot's failure report (description and action), as a bad value does, not a raw stack
     * trace (was: an IllegalStateException no failure analyzer knew).
     */
    @Test
    void aMisspeltNameFailsTheStartWithBootsFailureReport() {
        org.springframework.boot.SpringApplication application = new org.springframework.boot.SpringApplication(Empty.class);
        application.setWebApplicationType(org.springframework.boot.WebApplicationType.NONE);
        application.setDefaultProperties(Map.of("dlock.redis.ulr", "redis://localhost:6390", "dlock.store", "in-memory"));
        Throwable failure = org.assertj.core.api.Assertions.catchThrowable(application::run);

        org.springframework.boot.diagnostics.FailureAnalysis analysis = new DistributedLockFailureAnalyzer().analyze(failure);
        assertThat(analysis).as("dlock's failure analyzer recognises it").isNotNull();
        assertThat(analysis.getDescription()).contains("dlock.redis.ulr");
        assertThat(analysis.getAction()).contains("Fix the name");
    }

    /** An application with only dlock's auto-configuration. */
    @org.springframework.context.annotation.Configuration(proxyBeanMethods = false)
    @org.springframework.boot.autoconfigure.ImportAutoConfiguration(DistributedLockAutoConfiguration.class)
    static class Empty {
    }
}
