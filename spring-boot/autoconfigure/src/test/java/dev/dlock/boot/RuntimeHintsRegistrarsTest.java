package dev.dlock.boot;

import dev.dlock.boot.actuate.DistributedLockEndpoint;
import dev.dlock.boot.actuate.DistributedLockEndpointRuntimeHints;
import org.junit.jupiter.api.Test;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.aot.hint.TypeReference;
import org.springframework.aot.hint.predicate.RuntimeHintsPredicates;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;
import org.springframework.core.io.support.SpringFactoriesLoader;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The stores' and the endpoint's AOT hints, checked with Spring's {@code RuntimeHintsPredicates}: every Lua script and
 * schema file the stores ship is covered (listed from the class path, so a new file cannot be missed), and the
 * endpoint's answers can be written by Jackson.
 */
class RuntimeHintsRegistrarsTest {

    @Test
    void aotFactoriesListBothRegistrars() {
        List<RuntimeHintsRegistrar> registrars = SpringFactoriesLoader.forResourceLocation("META-INF/spring/aot.factories")
                .load(RuntimeHintsRegistrar.class);
        assertThat(registrars).hasAtLeastOneElementOfType(LockStoreRuntimeHints.class)
                .hasAtLeastOneElementOfType(DistributedLockEndpointRuntimeHints.class);
    }

    @Test
    void everyLuaScriptOfTheRedisStoreIsAResourceHint() throws IOException {
        RuntimeHints hints = storeHints();
        List<String> scripts = resources("classpath*:dev/dlock/redis/*.lua", "dev/dlock/redis/");
        assertThat(scripts).contains("dev/dlock/redis/acquire.lua", "dev/dlock/redis/fenced_write.lua").hasSizeGreaterThan(20);
        for (String script : scripts) {
            assertThat(RuntimeHintsPredicates.resource().forResource(script)).as(script).accepts(hints);
        }
    }

    @Test
    void everySchemaFileOfTheJdbcStoreIsAResourceHint() throws IOException {
        RuntimeHints hints = storeHints();
        List<String> schemas = resources("classpath*:dev/dlock/jdbc/*.sql", "dev/dlock/jdbc/");
        assertThat(schemas).contains("dev/dlock/jdbc/schema-postgresql.sql", "dev/dlock/jdbc/schema-h2.sql");
        for (String schema : schemas) {
            assertThat(RuntimeHintsPredicates.resource().forResource(schema)).as(schema).accepts(hints);
        }
        // Only the stores' own files: the application's resources are its own to register.
        assertThat(RuntimeHintsPredicates.resource().forResource("application.yml")).rejects(hints);
    }

    @Test
    void theMethodsTheRedisStoreBindsByMethodHandleAreHinted() {
        RuntimeHints hints = storeHints();
        assertThat(RuntimeHintsPredicates.reflection().onType(TypeReference.of("redis.clients.jedis.params.SetParams"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onType(TypeReference.of("redis.clients.jedis.UnifiedJedis"))).accepts(hints);
    }

    @Test
    void theEndpointsAnswersAreRegisteredForBinding() throws Exception {
        RuntimeHints hints = new RuntimeHints();
        new DistributedLockEndpointRuntimeHints().registerHints(hints, getClass().getClassLoader());
        for (Class<?> answer : List.of(DistributedLockEndpoint.HeldLocksDescriptor.class, DistributedLockEndpoint.HeldLockDescriptor.class,
                DistributedLockEndpoint.LockHoldersDescriptor.class, DistributedLockEndpoint.LockHolderDescriptor.class)) {
            assertThat(RuntimeHintsPredicates.reflection().onType(answer)).as(answer.getName()).accepts(hints);
        }
        // Jackson reads a record through its accessors.
        assertThat(RuntimeHintsPredicates.reflection().onMethod(
                DistributedLockEndpoint.LockHoldersDescriptor.class.getMethod("holders"))).accepts(hints);
        assertThat(RuntimeHintsPredicates.reflection().onMethod(
                DistributedLockEndpoint.HeldLockDescriptor.class.getMethod("fencingToken"))).accepts(hints);
    }

    private static RuntimeHints storeHints() {
        RuntimeHints hints = new RuntimeHints();
        new LockStoreRuntimeHints().registerHints(hints, RuntimeHintsRegistrarsTest.class.getClassLoader());
        return hints;
    }

    private static List<String> resources(String pattern, String directory) throws IOException {
        List<String> found = new ArrayList<>();
        for (Resource resource : new PathMatchingResourcePatternResolver().getResources(pattern)) {
            found.add(directory + resource.getFilename());
        }
        return found;
    }
}
