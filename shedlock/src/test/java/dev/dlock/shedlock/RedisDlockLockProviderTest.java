package dev.dlock.shedlock;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.testkit.redis.RedisServerProcess;
import dev.dlock.testkit.redis.SharedRedis;
import net.javacrumbs.shedlock.core.DefaultLockingTaskExecutor;
import net.javacrumbs.shedlock.core.LockingTaskExecutor;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** The provider's contract on a real Redis; every instance has a client of its own. */
class RedisDlockLockProviderTest extends DlockLockProviderContract {

    @Override
    protected LockBackend newBackend() {
        return TestStores.connect(SharedRedis.server().uri());
    }

    @Override
    protected void dispose(LockBackend backend) {
        TestStores.dispose(backend);
    }

    /**
     * A store gone at unlock leaves the outcome unknown: ShedLock's scheduler is told nothing it could not act on (the task's
     * result stands), the log says the lock frees itself within lockAtMostFor.
     */
    @Test
    void aStoreGoneAtUnlockIsLoggedAndTheTaskResultStands() throws Throwable {
        Logger logger = (Logger) LoggerFactory.getLogger(DlockLockProvider.class);
        ListAppender<ILoggingEvent> logged = new ListAppender<>();
        logged.start();
        logger.addAppender(logged);
        try (RedisServerProcess server = RedisServerProcess.start()) {
            LockBackend backend = TestStores.connect(server.uri());
            try (LockManager locks = LockManager.builder(backend).shutdownGracePeriod(Duration.ZERO).build()) {
                LockingTaskExecutor.TaskResult<String> result = new DefaultLockingTaskExecutor(new DlockLockProvider(locks))
                        .executeWithLock(() -> {
                            server.kill();
                            return "done";
                        }, config(job, Duration.ofSeconds(30), Duration.ZERO));
                assertThat(result.getResult()).isEqualTo("done");
            } finally {
                dispose(backend);
            }
        } finally {
            logger.detachAppender(logged);
        }
        assertThat(logged.list).filteredOn(event -> event.getLevel() == Level.WARN).singleElement()
                .extracting(ILoggingEvent::getFormattedMessage).asString().contains(job, "could not be released", "lockAtMostFor");
    }
}
