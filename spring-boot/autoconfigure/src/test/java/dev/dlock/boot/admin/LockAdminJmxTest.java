package dev.dlock.boot.admin;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockState;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;

import javax.management.JMException;
import javax.management.MBeanServer;
import javax.management.ObjectName;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The endpoint over JMX, with no web exposure: the same operations and the same key as over the web (the web's status
 * codes live in its web extension), the forced release under {@code management.endpoint.dlock.access=unrestricted}.
 */
@SpringBootTest(classes = LockAdminApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT, properties = {
        "dlock.store=in-memory", "dlock.instance-id=shop-jmx-1", "spring.jmx.enabled=true", "spring.jmx.unique-names=true",
        "management.endpoints.jmx.exposure.include=dlock", "management.endpoints.web.exposure.include=health",
        "management.endpoint.dlock.access=unrestricted"})
class LockAdminJmxTest extends LockAdminEndpointSupport {

    private static final String[] NAME_AND_KEY = {String.class.getName(), String.class.getName()};

    @Autowired
    private MBeanServer mbeanServer;

    @Test
    void listsHoldersAndForcesAReleaseOverJmxWithTheKeyTheListShows() throws Exception {
        ObjectName endpoint = endpoint();
        LockHandle stuck = holdOn("export-job", "exports", "e-1");
        try {
            Map<String, Object> listed = lockNamed("exports", invoke(endpoint, "heldLocks"));
            assertThat(listed).containsEntry("key", "exports:e-1");

            Map<String, Object> holders = invoke(endpoint, "holders", "exports", "exports:e-1");
            assertThat(holders).containsEntry("count", 1);

            Map<String, Object> removed = invoke(endpoint, "forceRelease", "exports", listed.get("key"));
            assertThat(removed).containsEntry("count", 1);
            assertThat((List<?>) removed.get("holders")).singleElement().asString().contains("shop-jmx-1").contains("export-job");
            assertThat(stuck.state()).isEqualTo(LockState.LOST);

            assertThatThrownBy(() -> invoke(endpoint, "forceRelease", "exprots", "exports:e-1")).isInstanceOf(JMException.class)
                    .hasMessageContaining("is not a key of lock 'exprots'");
        } finally {
            stuck.close();
        }
    }

    private ObjectName endpoint() throws Exception {
        return mbeanServer.queryNames(new ObjectName("org.springframework.boot:type=Endpoint,name=Dlock,*"), null).stream()
                .findFirst().orElseThrow(() -> new AssertionError("no dlock endpoint MBean"));
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> invoke(ObjectName endpoint, String operation, Object... nameAndKey) throws Exception {
        return (Map<String, Object>) mbeanServer.invoke(endpoint, operation, nameAndKey,
                nameAndKey.length == 0 ? new String[0] : NAME_AND_KEY);
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> lockNamed(String name, Map<String, Object> heldLocks) {
        return ((List<Map<String, Object>>) heldLocks.get("locks")).stream().filter(lock -> name.equals(lock.get("name")))
                .findFirst().orElseThrow(() -> new AssertionError("no lock " + name + " in " + heldLocks));
    }
}
