package dev.dlock.boottests.stores;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.OverlapDetector;
import dev.dlock.zookeeper.ZooKeeperLockBackend;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.api.ACLProvider;
import org.apache.curator.retry.RetryOneTime;
import org.apache.curator.test.TestingServer;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.ZooDefs;
import org.apache.zookeeper.data.ACL;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.SpringBootVersion;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.context.TestConfiguration;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.boot.test.web.server.LocalServerPort;
import org.springframework.context.ApplicationContext;
import org.springframework.context.annotation.Bean;

import java.nio.charset.StandardCharsets;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A Spring Boot 3.5 application with dlock-zookeeper-spring-boot3-starter over its own
 * {@link CuratorFramework}, which authenticates with a digest and gives every node it creates
 * {@code CREATOR_ALL_ACL} (the setup docs/zookeeper.md describes), against an in-process ZooKeeper: the
 * annotated method locks without overlap, the lock nodes carry the digest ACL so a client without the
 * credentials cannot delete a holder's node, and the digest secret appears in no log line and no actuator answer.
 */
@ExtendWith(OutputCaptureExtension.class)
@SpringBootTest(classes = {LedgerApplication.class, ZooKeeperStoreApplicationTest.DigestClient.class},
        webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {
                "dlock.store=zookeeper",
                "dlock.zookeeper.base-path=/ledger-locks",
                "management.endpoints.web.exposure.include=health,dlock",
                "management.endpoint.health.show-details=always",
                "logging.level.dev.dlock=DEBUG"})
class ZooKeeperStoreApplicationTest {

    /** The digest credentials: user:secret, the secret distinctive so that any leak of it is found by a plain search. */
    static final String SECRET = "zk-digest-5e1d8b27-never-logged";
    static final String DIGEST_USER = "ledger";

    private static final TestingServer ZOOKEEPER = startZooKeeper();

    /** The application's client: digest-authenticated, its nodes readable and writable by that identity only. */
    @TestConfiguration(proxyBeanMethods = false)
    static class DigestClient {
        @Bean(initMethod = "start", destroyMethod = "close")
        CuratorFramework curatorFramework() {
            return CuratorFrameworkFactory.builder()
                    .connectString(ZOOKEEPER.getConnectString())
                    .retryPolicy(new RetryOneTime(100))
                    .authorization("digest", (DIGEST_USER + ":" + SECRET).getBytes(StandardCharsets.UTF_8))
                    .aclProvider(new ACLProvider() {
                        @Override
                        public List<ACL> getDefaultAcl() {
                            return ZooDefs.Ids.CREATOR_ALL_ACL;
                        }

                        @Override
                        public List<ACL> getAclForPath(String path) {
                            return ZooDefs.Ids.CREATOR_ALL_ACL;
                        }
                    })
                    .build();
        }
    }

    @LocalServerPort
    private int port;

    @Autowired
    private LedgerApplication.Ledger ledger;

    @Autowired
    private OverlapDetector overlaps;

    @Autowired
    private ApplicationContext context;

    @AfterAll
    static void stopZooKeeper() throws Exception {
        ZOOKEEPER.close();
    }

    @Test
    void annotatedMethodLocksInZooKeeperWithoutOverlap() throws Exception {
        assertThat(SpringBootVersion.getVersion()).as("Spring Boot line of this module").startsWith("3.5.");
        assertThat(context.getBean(LockBackend.class)).isInstanceOf(ZooKeeperLockBackend.class);
        assertThat(context.getBeansOfType(CuratorFramework.class)).as("the application's client, reused").hasSize(1);
        AppChecks.postConcurrentlyWithoutOverlap(ledger, overlaps, 6, 25);
    }

    @Test
    void lockNodesCarryTheDigestAclAndAStrangerCannotDeleteAHoldersNode() throws Exception {
        CuratorFramework app = context.getBean(CuratorFramework.class);
        try (AppChecks.Held held = new AppChecks.Held(ledger, "acct-acl");
             CuratorFramework stranger = CuratorFrameworkFactory.newClient(ZOOKEEPER.getConnectString(), new RetryOneTime(100))) {
            stranger.start();
            String keyNode = null;
            for (String child : app.getChildren().forPath("/ledger-locks")) {
                if (child.contains("acct-acl")) {
                    keyNode = "/ledger-locks/" + child;
                }
            }
            assertThat(keyNode).as("the key's node under the base path").isNotNull();
            List<String> lockNodes = app.getChildren().forPath(keyNode);
            assertThat(lockNodes).as("the holder's node").hasSize(1);
            String holderNode = keyNode + "/" + lockNodes.get(0);
            for (String node : List.of("/ledger-locks", keyNode, holderNode)) {
                assertThat(app.getACL().forPath(node)).as("ACL of %s", node).singleElement().satisfies(acl -> {
                    assertThat(acl.getId().getScheme()).isEqualTo("digest");
                    assertThat(acl.getId().getId()).startsWith(DIGEST_USER + ":").doesNotContain(SECRET);
                    assertThat(acl.getPerms()).isEqualTo(ZooDefs.Perms.ALL);
                });
            }
            String path = keyNode;
            assertThatThrownBy(() -> stranger.getChildren().forPath(path)).isInstanceOf(KeeperException.NoAuthException.class);
            assertThatThrownBy(() -> stranger.delete().forPath(holderNode)).isInstanceOf(KeeperException.NoAuthException.class);
            assertThat(app.checkExists().forPath(holderNode)).as("the holder's node after the stranger's delete").isNotNull();
        }
    }

    @Test
    void theDigestSecretAppearsInNoLogAndNoActuatorAnswer(CapturedOutput output) throws Exception {
        assertThat(output.getAll()).as("captured log").contains("dlock locks in ZooKeeper " + ZOOKEEPER.getConnectString());
        AppChecks.assertSecretInNoActuatorAnswerAndNoLog(port, ledger, output, SECRET);
    }

    private static TestingServer startZooKeeper() {
        try {
            return new TestingServer(true);
        } catch (Exception e) {
            throw new IllegalStateException("Cannot start the in-process ZooKeeper", e);
        }
    }
}
