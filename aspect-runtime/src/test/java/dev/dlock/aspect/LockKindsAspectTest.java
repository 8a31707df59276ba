package dev.dlock.aspect;

import dev.dlock.core.LockKind;
import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.LockMode;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockManager;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.Concurrently;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.context.annotation.EnableAspectJAutoProxy;

import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.catchThrowable;

/**
 * {@code mode}, {@code permits} and {@code fair} on annotated methods: what they lock, checked by detectors
 * sized for each kind, and the combinations or stores that cannot work refused at startup by method and attribute.
 */
class LockKindsAspectTest {

    /** Counts who is inside, per kind of section. */
    public static final class Sections {
        final AtomicInteger readers = new AtomicInteger();
        final AtomicInteger writers = new AtomicInteger();
        final AtomicInteger exporters = new AtomicInteger();
        final AtomicInteger mostReaders = new AtomicInteger();
        final AtomicInteger mostExporters = new AtomicInteger();
        final AtomicInteger violations = new AtomicInteger();
        final String id = UUID.randomUUID().toString();
    }

    /** A document store: many readers or one writer per document; at most three exports at once. */
    public static class Documents {
        private final Sections sections;
        /** The proxy, so that a read inside a write goes through the aspect (re-entry), not around it. */
        Documents self;
        private volatile Thread writer;

        public Documents(Sections sections) {
            this.sections = sections;
        }

        @DistributedLock(name = "doc", key = "#id", mode = LockMode.READ, waitTime = "60s")
        public void read(String id) {
            sections.mostReaders.accumulateAndGet(sections.readers.incrementAndGet(), Math::max);
            if (sections.writers.get() != 0 && writer != Thread.currentThread()) {
                sections.violations.incrementAndGet();
            }
            pause();
            sections.readers.decrementAndGet();
        }

        @DistributedLock(name = "doc", key = "#id", mode = LockMode.WRITE, waitTime = "60s")
        public void write(String id) {
            if (sections.writers.incrementAndGet() != 1 || sections.readers.get() != 0) {
                sections.violations.incrementAndGet();
            }
            writer = Thread.currentThread();
            pause();
            // A read inside the write re-enters it.
            self.read(id);
            writer = null;
            sections.writers.decrementAndGet();
        }

        @DistributedLock(name = "export", key = "#id", permits = 3, waitTime = "60s")
        public void export(String id) {
            sections.mostExporters.accumulateAndGet(sections.exporters.incrementAndGet(), Math::max);
            pause();
            sections.exporters.decrementAndGet();
        }

        private static void pause() {
            try {
                TimeUnit.MICROSECONDS.sleep(400);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The aspect over the shared in-memory store. */
    @Configuration(proxyBeanMethods = false)
    @EnableAspectJAutoProxy(proxyTargetClass = true)
    @EnableDistributedLocks
    static class StoreLocking {
        @Bean
        LockManager lockManager() {
            return LockManager.builder(TestContexts.STORE).leaseTime(Duration.ofSeconds(3)).build();
        }
    }

    /** The aspect over a store that takes exclusive locks only (the in-memory store seen through the exclusive SPI alone). */
    @Configuration(proxyBeanMethods = false)
    @EnableAspectJAutoProxy(proxyTargetClass = true)
    @EnableDistributedLocks
    static class ExclusiveOnlyLocking {
        @Bean
        LockManager lockManager() {
            return LockManager.builder(new ExclusiveOnlyStore(TestContexts.STORE)).build();
        }
    }

    /** A store with exclusive locks only, as JDBC or Redlock: it declares the default capabilities and refuses other kinds. */
    static final class ExclusiveOnlyStore implements LockBackend {
        private final LockBackend store;

        ExclusiveOnlyStore(LockBackend store) {
            this.store = store;
        }

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            BackendCapabilities.requireExclusive(this, kind);
            return store.tryAcquire(kind, key, owner, leaseMillis);
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            BackendCapabilities.requireExclusive(this, kind);
            return store.release(kind, key, owner, fencingToken);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            return store.renew(batch);
        }

        @Override
        public long ping() {
            return store.ping();
        }
    }

    private static AnnotationConfigApplicationContext start(Class<?> locking, Class<?> beanClass, Supplier<?> bean) {
        AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        context.register(locking);
        registerBean(context, beanClass, bean);
        context.refresh();
        return context;
    }

    @SuppressWarnings("unchecked")
    private static <T> void registerBean(AnnotationConfigApplicationContext context, Class<T> type, Supplier<?> bean) {
        context.registerBean(type, (Supplier<T>) bean);
    }

    @Test
    void readersShareWritersAreAloneAndPermitsCapTheHolders() throws Exception {
        Sections sections = new Sections();
        Documents target = new Documents(sections);
        try (AnnotationConfigApplicationContext context = start(StoreLocking.class, Documents.class, () -> target)) {
            Documents documents = context.getBean(Documents.class);
            target.self = documents;
            Concurrently.run(12, 40, Duration.ofMinutes(3), () -> {
                int dice = ThreadLocalRandom.current().nextInt(6);
                if (dice == 0) {
                    documents.write(sections.id);
                } else if (dice < 4) {
                    documents.read(sections.id);
                } else {
                    documents.export(sections.id);
                }
            });
        }
        assertThat(sections.violations.get()).as("a writer beside another holder").isZero();
        assertThat(sections.mostExporters.get()).as("most exports at once").isBetween(1, 3);
    }

    public static class PermitsWithMode {
        @DistributedLock(key = "#id", permits = 3, mode = LockMode.READ)
        public void run(String id) {
        }
    }

    public static class ZeroPermits {
        @DistributedLock(key = "#id", permits = 0)
        public void run(String id) {
        }
    }

    public static class FairReader {
        @DistributedLock(key = "#id", mode = LockMode.READ, fair = true)
        public void run(String id) {
        }
    }

    public static class FairPermits {
        @DistributedLock(key = "#id", permits = 2, fair = true)
        public void run(String id) {
        }
    }

    public static class PlainAndReadOfOneName {
        @DistributedLock(name = "report", key = "#id")
        public void run(String id) {
        }

        @DistributedLock(name = "report", key = "#id", mode = LockMode.READ)
        public void view(String id) {
        }
    }

    public static class PermitsDisagree {
        @DistributedLock(name = "export", key = "#id", permits = 3)
        public void run(String id) {
        }

        @DistributedLock(name = "export", key = "#id", permits = 4)
        public void view(String id) {
        }
    }

    static Stream<Arguments> badKinds() {
        return Stream.of(
                Arguments.of(PermitsWithMode.class, "permits", "cannot be combined with mode = READ"),
                Arguments.of(ZeroPermits.class, "permits", "must be at least 1, was 0"),
                Arguments.of(FairReader.class, "fair", "exclusive locks only, not with mode = READ"),
                Arguments.of(FairPermits.class, "fair", "exclusive locks only, not with permits = 2"),
                Arguments.of(PlainAndReadOfOneName.class, "name", "lock 'report' is taken as"),
                Arguments.of(PermitsDisagree.class, "name", "permits must agree"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badKinds")
    void kindsThatCannotWorkTogetherFailTheStart(Class<?> beanClass, String attribute, String why) {
        Throwable failure = catchThrowable(() -> start(StoreLocking.class, beanClass, () -> newInstance(beanClass)).close());
        assertThat(failure).isNotNull();
        assertThat(messages(failure)).contains(beanClass.getName()).contains("attribute '" + attribute + "'").contains(why);
    }

    public static class ReadOnExclusiveStore {
        @DistributedLock(key = "#id", mode = LockMode.READ)
        public void run(String id) {
        }
    }

    @Test
    void aKindTheStoreCannotTakeFailsTheStartNamingMethodAndStore() {
        Throwable failure = catchThrowable(() -> start(ExclusiveOnlyLocking.class, ReadOnExclusiveStore.class, ReadOnExclusiveStore::new).close());
        assertThat(messages(failure)).contains(ReadOnExclusiveStore.class.getName() + ".run(String)")
                .contains("attribute 'mode'").contains("ExclusiveOnlyStore cannot take READ locks");
    }

    private static Object newInstance(Class<?> type) {
        try {
            return type.getDeclaredConstructor().newInstance();
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException(e);
        }
    }

    private static String messages(Throwable failure) {
        StringBuilder all = new StringBuilder();
        for (Throwable t = failure; t != null; t = t.getCause()) {
            if (t instanceof LockAnnotationException) {
                all.append(t.getMessage()).append('\n');
            }
        }
        assertThat(all).as("a LockAnnotationException in %s", failure).isNotEmpty();
        return all.toString();
    }
}
