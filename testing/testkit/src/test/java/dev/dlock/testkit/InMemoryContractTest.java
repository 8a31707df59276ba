package dev.dlock.testkit;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The backend contract against {@link InMemoryLockBackend}. Every backend the factory creates is a
 * client of one store shared by the whole class, as separate processes share one Redis; the clients
 * count the commands that reach the store (nothing else reaches it) and remember who took each key,
 * so that a key can be deleted behind its holder's back. The store lives in this JVM, so the child-JVM
 * test and the crash tests do not apply.
 */
class InMemoryContractTest extends LockBackendContractTest {

    private static final InMemoryLockBackend STORE = new InMemoryLockBackend();
    private static final AtomicLong COMMANDS = new AtomicLong();
    private static final Map<String, Taken> LAST_TAKEN = new ConcurrentHashMap<>();

    private record Taken(String owner, long fencingToken) {
    }

    @Override
    protected BackendFactory factory() {
        return new SharedStoreFactory();
    }

    @Override
    protected String connection() {
        return "in-memory";
    }

    @Override
    protected void deleteKey(String key) {
        Taken taken = LAST_TAKEN.get(key);
        assertThat(taken).as("someone took %s", key).isNotNull();
        // The owner's own compare-and-delete is the only way into this store; for the holder it is a deletion it did not make.
        assertThat(STORE.release(LockKind.EXCLUSIVE, key, taken.owner(), taken.fencingToken())).as("deleted the lock entry").isEqualTo(ReleaseResult.RELEASED);
    }

    @Override
    protected void wipeStore() {
        STORE.close();
    }

    @Override
    protected boolean sharedAcrossJvms() {
        return false;
    }

    @Override
    protected long storeCommandCount() {
        return COMMANDS.get();
    }

    /** Hands out clients of the shared store; disposing a client leaves the store to the other clients. */
    public static final class SharedStoreFactory implements BackendFactory {

        @Override
        public LockBackend create(String connection) {
            return new Client();
        }

        @Override
        public void dispose(LockBackend backend) {
        }
    }

    /** One client of the shared store: counts its commands and records who took which key. */
    private static final class Client implements LockBackend {

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            BackendCapabilities.requireExclusive(this, kind);
            COMMANDS.incrementAndGet();
            AcquireResult result = STORE.tryAcquire(kind, key, owner, leaseMillis);
            if (result instanceof AcquireResult.Acquired acquired) {
                LAST_TAKEN.put(key, new Taken(owner, acquired.fencingToken()));
            }
            return result;
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            BackendCapabilities.requireExclusive(this, kind);
            COMMANDS.incrementAndGet();
            return STORE.release(kind, key, owner, fencingToken);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            COMMANDS.incrementAndGet();
            return STORE.renew(batch);
        }

        @Override
        public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
            COMMANDS.incrementAndGet();
            return STORE.shorten(kind, key, owner, retiredOwner, keepMillis);
        }

        /** Exclusive locks, the store's release notices (each subscription counted) and its extension (counted). */
        @Override
        public BackendCapabilities capabilities() {
            LeaseExtension extension = STORE.capabilities().leaseExtension().orElseThrow();
            return BackendCapabilities.DEFAULT.withReleaseNotices(STORE.capabilities().releaseNotices().map(CountingNotices::new)
                    .orElse(null)).withLeaseExtension((kind, key, owner, nextOwner, leaseMillis) -> {
                        COMMANDS.incrementAndGet();
                        return extension.extend(kind, key, owner, nextOwner, leaseMillis);
                    });
        }

        @Override
        public long ping() {
            COMMANDS.incrementAndGet();
            return STORE.ping();
        }
    }

    /** Counts a subscription as a command, as a store connection would. */
    private record CountingNotices(ReleaseNotices delegate) implements ReleaseNotices {

        @Override
        public Subscription subscribe(String key, Runnable onRelease) {
            COMMANDS.incrementAndGet();
            return delegate.subscribe(key, onRelease);
        }
    }
}
