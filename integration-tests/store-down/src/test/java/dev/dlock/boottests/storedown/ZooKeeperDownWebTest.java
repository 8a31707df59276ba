package dev.dlock.boottests.storedown;

import org.apache.curator.test.TestingServer;
import org.junit.jupiter.api.AfterAll;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.test.annotation.DirtiesContext;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

/** The web application on ZooKeeper ({@code dlock.store=zookeeper}); the store goes down as the in-process server stops. */
@SpringBootTest(classes = OrderApplication.class, webEnvironment = SpringBootTest.WebEnvironment.RANDOM_PORT,
        properties = {"dlock.store=zookeeper", "dlock.zookeeper.connection-timeout=2s"})
@DirtiesContext
class ZooKeeperDownWebTest extends StoreDownWebContract {

    private static final TestingServer ZOOKEEPER = startZooKeeper();

    @DynamicPropertySource
    static void zookeeper(DynamicPropertyRegistry registry) {
        registry.add("dlock.zookeeper.connect-string", ZOOKEEPER::getConnectString);
    }

    @AfterAll
    static void closeZooKeeper() throws Exception {
        ZOOKEEPER.close();
    }

    @Override
    void stopStore() throws Exception {
        ZOOKEEPER.stop();
    }

    private static TestingServer startZooKeeper() {
        try {
            return new TestingServer(true);
        } catch (Exception e) {
            throw new IllegalStateException("Cannot start the in-process ZooKeeper", e);
        }
    }
}
