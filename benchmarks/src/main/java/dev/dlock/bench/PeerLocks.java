package dev.dlock.bench;

import com.baomidou.lock.LockInfo;
import com.baomidou.lock.LockTemplate;
import com.baomidou.lock.executor.RedisTemplateLockExecutor;
import com.baomidou.lock.spring.boot.autoconfigure.Lock4jProperties;
import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.redis.RedisLockBackend;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import net.javacrumbs.shedlock.provider.redis.spring.RedisLockProvider;
import org.redisson.Redisson;
import org.redisson.api.RLock;
import org.redisson.api.RedissonClient;
import org.redisson.config.Config;
import org.springframework.context.annotation.AnnotationConfigApplicationContext;
import org.springframework.data.redis.connection.RedisStandaloneConfiguration;
import org.springframework.data.redis.connection.jedis.JedisClientConfiguration;
import org.springframework.data.redis.connection.jedis.JedisConnectionFactory;
import org.springframework.data.redis.core.StringRedisTemplate;
import org.springframework.integration.redis.util.RedisLockRegistry;
import org.springframework.scheduling.concurrent.ThreadPoolTaskScheduler;
import redis.clients.jedis.JedisPoolConfig;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.params.SetParams;

import java.net.URI;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Lock;
import java.util.function.Supplier;

/**
 * The lock libraries under comparison, each behind {@link LockUnderTest}, created by id against the
 * Redis named by {@value BenchRedis#PROPERTY}. Every library gets the same connection budget
 * (a pool of 128 where it pools connections) and otherwise its own defaults.
 */
final class PeerLocks {

    /** How long an adapter waits for a held key before giving up; longer than any scenario needs. */
    static final Duration WAIT = Duration.ofSeconds(60);
    /** Connections per pooled client: more than the most benchmark threads, so the pool is never the bottleneck. */
    static final int POOL_SIZE = 128;

    private static final Map<String, String> DESCRIPTIONS = new LinkedHashMap<>();

    static {
        DESCRIPTIONS.put("raw-jedis", "Jedis SET NX PX 30000 + Lua compare-and-delete; waits by retrying every 1 ms");
        DESCRIPTIONS.put("dlock", "dlock LockManager.acquire(key, 60 s), watchdog-managed 30 s lease");
        DESCRIPTIONS.put("dlock-token", "dlock as `dlock`, reading the lock's fencing token once per hold without saying so up front "
                + "(issued on request: one more round trip)");
        DESCRIPTIONS.put("dlock-fenced", "dlock as `dlock-token`, the request saying it reads the token (`readsFencingToken(true)`, as "
                + "`@DistributedLock(fencingToken = true)` does): issued with the acquisition or the hand-off, no round trip of its own");
        DESCRIPTIONS.put("dlock-direct", "dlock as `dlock`, with coalesceRoundTrips(false): every call on its own pooled connection");
        DESCRIPTIONS.put("dlock-no-handoff", "dlock as `dlock`, with localHandOff(false): every local hand-off is a release + acquisition");
        DESCRIPTIONS.put("dlock-fair", "dlock LockManager.acquire with LockKind.FAIR: every waiting thread queues in Redis, FIFO across JVMs");
        DESCRIPTIONS.put("dlock-annotation", "dlock @DistributedLock(key = \"#key\") through a Spring AOP proxy");
        DESCRIPTIONS.put("redisson", "Redisson 4.7.0 RLock.lock(), defaults (pool 64, watchdog 30 s)");
        DESCRIPTIONS.put("redisson-pool128", "Redisson RLock.lock() with connectionPoolSize = minimumIdle = 128");
        DESCRIPTIONS.put("rlr-spin", "Spring Integration 7.0.0 RedisLockRegistry, default SPIN_LOCK (retry every 100 ms)");
        DESCRIPTIONS.put("rlr-pubsub", "RedisLockRegistry with RedisLockType.PUB_SUB_LOCK");
        DESCRIPTIONS.put("rlr-renewing", "RedisLockRegistry (spin) with a renewal TaskScheduler, the mode that renews leases");
        DESCRIPTIONS.put("thread-per-lock", "Jedis SET NX PX 30000 and one daemon thread per held lock extending it every 10 s "
                + "by Lua compare-and-PEXPIRE (the one-renewal-thread-per-lock design)");
        DESCRIPTIONS.put("lock4j", "lock4j 2.2.7 LockTemplate + RedisTemplateLockExecutor (fixed 30 s expiry, retry every 100 ms)");
        DESCRIPTIONS.put("shedlock", "ShedLock 6.10.0 RedisLockProvider (shedlock-provider-redis-spring over Spring Data Redis + Jedis, "
                + "pool 128), defaults: LockProvider.lock(lockAtMostFor 30 s, lockAtLeastFor 0) = SET NX PX, "
                + "SimpleLock.unlock() = DEL without an owner check; no waiting acquire, no renewal");
        DESCRIPTIONS.put("shedlock-spin", "the same ShedLock provider on the hot key: it cannot wait, so the adapter retries "
                + "lock() every 1 ms while the key is held, like raw-jedis");
    }

    private PeerLocks() {
    }

    /** Every library id, in report order. */
    static List<String> ids() {
        return List.copyOf(DESCRIPTIONS.keySet());
    }

    /** What the library {@code id} is and how it is configured, for the report. */
    static String describe(String id) {
        return DESCRIPTIONS.get(id);
    }

    /** Opens the library {@code id} against the benchmark Redis. */
    static LockUnderTest open(String id) {
        return switch (id) {
            case "raw-jedis" -> new RawJedis();
            case "dlock" -> new Dlock("dlock", LockKind.EXCLUSIVE);
            case "dlock-fair" -> new Dlock("dlock-fair", LockKind.FAIR);
            case "dlock-token" -> new Dlock("dlock-token", LockKind.EXCLUSIVE, true, true, true, false);
            case "dlock-fenced" -> new Dlock("dlock-fenced", LockKind.EXCLUSIVE, true, true, true, true);
            case "dlock-direct" -> new Dlock("dlock-direct", LockKind.EXCLUSIVE, false, true);
            case "dlock-no-handoff" -> new Dlock("dlock-no-handoff", LockKind.EXCLUSIVE, true, false);
            case "dlock-annotation" -> new DlockAnnotation();
            case "redisson" -> new RedissonLocks(id, false);
            case "redisson-pool128" -> new RedissonLocks(id, true);
            case "rlr-spin" -> new LockRegistry(id, RedisLockRegistry.RedisLockType.SPIN_LOCK, false);
            case "rlr-pubsub" -> new LockRegistry(id, RedisLockRegistry.RedisLockType.PUB_SUB_LOCK, false);
            case "rlr-renewing" -> new LockRegistry(id, RedisLockRegistry.RedisLockType.SPIN_LOCK, true);
            case "lock4j" -> new Lock4j();
            case "shedlock", "shedlock-spin" -> new ShedLock(id);
            case "thread-per-lock" -> new ThreadPerLock();
            default -> throw new IllegalArgumentException("unknown library '" + id + "', known: " + ids());
        };
    }

    private static URI redisUri() {
        return URI.create(System.getProperty(BenchRedis.PROPERTY));
    }

    /** A started Spring Data Redis connection factory over Jedis with {@link #POOL_SIZE} pooled connections. */
    private static JedisConnectionFactory springJedisFactory() {
        URI uri = redisUri();
        JedisPoolConfig pool = new JedisPoolConfig();
        pool.setMaxTotal(POOL_SIZE);
        pool.setMaxIdle(POOL_SIZE);
        JedisConnectionFactory factory = new JedisConnectionFactory(new RedisStandaloneConfiguration(uri.getHost(), uri.getPort()),
                JedisClientConfiguration.builder().usePooling().poolConfig(pool).build());
        factory.afterPropertiesSet();
        factory.start();
        return factory;
    }

    /** SET NX PX 30 s of {@code rawKey} to {@code owner}, retried every millisecond while held, for up to {@link #WAIT}. */
    private static void setWhenFree(UnifiedJedis redis, String rawKey, String owner, String library) throws InterruptedException {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (redis.set(rawKey, owner, SetParams.setParams().nx().px(30_000)) == null) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException(library + ": " + rawKey + " not acquired within " + WAIT);
            }
            TimeUnit.MILLISECONDS.sleep(1);
        }
    }

    /** The baseline: SET NX PX with an owner token, retry every millisecond while held, compare-and-delete by EVALSHA. */
    static final class RawJedis implements LockUnderTest {
        private static final String COMPARE_AND_DELETE =
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
        private final UnifiedJedis redis = BenchRedis.client();
        private final String compareAndDeleteSha = redis.scriptLoad(COMPARE_AND_DELETE);
        private final String ownerPrefix = UUID.randomUUID() + ":";
        private final AtomicLong ownerSequence = new AtomicLong();

        @Override
        public String name() {
            return "raw-jedis";
        }

        @Override
        public AutoCloseable lock(String key) throws InterruptedException {
            String owner = ownerPrefix + ownerSequence.incrementAndGet();
            String rawKey = storeKey(key);
            setWhenFree(redis, rawKey, owner, name());
            return () -> redis.evalsha(compareAndDeleteSha, List.of(rawKey), List.of(owner));
        }

        @Override
        public boolean renewsLeases() {
            return false;
        }

        @Override
        public String storeKey(String key) {
            return "raw:" + key;
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    /** The design the watchdog replaces: each held lock has a renewal thread of its own. */
    static final class ThreadPerLock implements LockUnderTest {
        private static final String COMPARE_AND_DELETE =
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end return 0";
        private static final String COMPARE_AND_EXPIRE =
                "if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('PEXPIRE', KEYS[1], ARGV[2]) end return 0";
        private static final String RENEWAL_THREAD = "renewal-";
        private final UnifiedJedis redis = BenchRedis.client();
        private final String deleteSha = redis.scriptLoad(COMPARE_AND_DELETE);
        private final String expireSha = redis.scriptLoad(COMPARE_AND_EXPIRE);
        private final String ownerPrefix = UUID.randomUUID() + ":";
        private final AtomicLong ownerSequence = new AtomicLong();

        @Override
        public String name() {
            return "thread-per-lock";
        }

        @Override
        public AutoCloseable lock(String key) throws InterruptedException {
            String owner = ownerPrefix + ownerSequence.incrementAndGet();
            String rawKey = storeKey(key);
            setWhenFree(redis, rawKey, owner, name());
            Thread renewal = new Thread(() -> {
                try {
                    while (true) {
                        TimeUnit.SECONDS.sleep(10);
                        redis.evalsha(expireSha, List.of(rawKey), List.of(owner, "30000"));
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }, RENEWAL_THREAD + key);
            renewal.setDaemon(true);
            renewal.start();
            return () -> {
                renewal.interrupt();
                redis.evalsha(deleteSha, List.of(rawKey), List.of(owner));
            };
        }

        @Override
        public boolean renewsLeases() {
            return true;
        }

        @Override
        public String storeKey(String key) {
            return "tpl:" + key;
        }

        @Override
        public boolean isRenewalThread(String threadName) {
            return threadName.startsWith(RENEWAL_THREAD);
        }

        @Override
        public void close() {
            redis.close();
        }
    }

    /** dlock's programmatic API with its defaults. */
    static final class Dlock implements LockUnderTest {
        private final UnifiedJedis redis = BenchRedis.client();
        private final RedisLockBackend backend;
        private final LockManager locks;
        private final String name;
        private final LockKind kind;
        /** Whether each hold reads its fencing token, as a method with a fencing guard does. */
        private final boolean readsToken;
        /** Whether the request says so ({@code readsFencingToken}), so that the token comes with the acquisition. */
        private final boolean declaresToken;

        Dlock(String name, LockKind kind) {
            this(name, kind, true, true);
        }

        Dlock(String name, LockKind kind, boolean coalesce, boolean handOff) {
            this(name, kind, coalesce, handOff, false, false);
        }

        Dlock(String name, LockKind kind, boolean coalesce, boolean handOff, boolean readsToken, boolean declaresToken) {
            this.name = name;
            this.kind = kind;
            this.readsToken = readsToken;
            this.declaresToken = declaresToken;
            this.backend = RedisLockBackend.builder(redis).coalesceRoundTrips(coalesce).build();
            this.locks = LockManager.builder(backend).localHandOff(handOff).build();
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public AutoCloseable lock(String key) {
            LockHandle lock = locks.acquire(LockRequest.builder(key).kind(kind).readsFencingToken(declaresToken).waitTime(WAIT).build());
            if (readsToken && lock.fencingToken() <= 0) {
                lock.close();
                throw new IllegalStateException(name + ": no fencing token for " + key);
            }
            return lock;
        }

        @Override
        public boolean renewsLeases() {
            return true;
        }

        @Override
        public String storeKey(String key) {
            return RedisLockBackend.DEFAULT_KEY_PREFIX + "{" + key + "}";
        }

        @Override
        public boolean isRenewalThread(String threadName) {
            return threadName.equals("dlock-watchdog");
        }

        @Override
        public void close() {
            locks.close();
            backend.close();
            redis.close();
        }
    }

    /** A bean whose method runs a body under {@code @DistributedLock}. */
    public static class AnnotatedCalls {
        /** Runs {@code body} holding the lock {@code AnnotatedCalls.call:<key>}. */
        @DistributedLock(key = "#key", waitTime = "60s")
        public Object call(String key, Supplier<?> body) {
            return body.get();
        }
    }

    /** dlock through {@code @DistributedLock} on a Spring AOP proxy; only {@link #locked} works. */
    static final class DlockAnnotation implements LockUnderTest {
        private final AnnotationConfigApplicationContext context = new AnnotationConfigApplicationContext();
        private final AnnotatedCalls calls;

        DlockAnnotation() {
            // The same context as the aspect-overhead benchmark (aspect, one lock manager with defaults), plus our bean.
            context.register(AspectOverhead.Context.class);
            context.registerBean(AnnotatedCalls.class);
            context.refresh();
            calls = context.getBean(AnnotatedCalls.class);
        }

        @Override
        public String name() {
            return "dlock-annotation";
        }

        @Override
        public AutoCloseable lock(String key) {
            throw new UnsupportedOperationException("the annotation holds a lock only for the length of a call");
        }

        @Override
        @SuppressWarnings("unchecked")
        public <T> T locked(String key, Supplier<T> body) {
            return (T) calls.call(key, body);
        }

        @Override
        public boolean renewsLeases() {
            return true;
        }

        @Override
        public String storeKey(String key) {
            return RedisLockBackend.DEFAULT_KEY_PREFIX + "{AnnotatedCalls.call:" + key + "}";
        }

        @Override
        public void close() {
            context.close();
        }
    }

    /** Redisson's {@code RLock.lock()}: watchdog-managed, released by the thread that took it. */
    static final class RedissonLocks implements LockUnderTest {
        private final String name;
        private final RedissonClient redisson;

        RedissonLocks(String name, boolean largePool) {
            this.name = name;
            Config config = new Config();
            var server = config.useSingleServer().setAddress(redisUri().toString());
            if (largePool) {
                server.setConnectionPoolSize(POOL_SIZE).setConnectionMinimumIdleSize(POOL_SIZE);
            }
            redisson = Redisson.create(config);
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public AutoCloseable lock(String key) {
            RLock lock = redisson.getLock(key);
            lock.lock();
            return lock::unlock;
        }

        @Override
        public boolean renewsLeases() {
            return true;
        }

        @Override
        public String storeKey(String key) {
            return key;
        }

        @Override
        public boolean isRenewalThread(String threadName) {
            return threadName.startsWith("redisson-");
        }

        @Override
        public void close() {
            redisson.shutdown();
        }
    }

    /** Spring Integration's {@code RedisLockRegistry} in spin or pub/sub mode, optionally with lease renewal. */
    static final class LockRegistry implements LockUnderTest {
        private static final String REGISTRY_KEY = "rlr";
        private final String name;
        private final JedisConnectionFactory factory = springJedisFactory();
        private final RedisLockRegistry registry;
        private final ThreadPoolTaskScheduler renewalScheduler;

        LockRegistry(String name, RedisLockRegistry.RedisLockType type, boolean renewing) {
            this.name = name;
            registry = new RedisLockRegistry(factory, REGISTRY_KEY);
            registry.setRedisLockType(type);
            if (renewing) {
                // Held locks must not fall out of the registry's local cache (default capacity 100,000).
                registry.setCacheCapacity(1_000_000);
                renewalScheduler = new ThreadPoolTaskScheduler();
                renewalScheduler.setThreadNamePrefix("rlr-renewal-");
                renewalScheduler.initialize();
                registry.setRenewalTaskScheduler(renewalScheduler);
            } else {
                renewalScheduler = null;
            }
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public AutoCloseable lock(String key) {
            Lock lock = registry.obtain(key);
            lock.lock();
            return lock::unlock;
        }

        @Override
        public boolean renewsLeases() {
            return renewalScheduler != null;
        }

        @Override
        public String storeKey(String key) {
            return REGISTRY_KEY + ":" + key;
        }

        @Override
        public boolean isRenewalThread(String threadName) {
            return threadName.startsWith("rlr-renewal-");
        }

        @Override
        public void close() {
            registry.destroy();
            if (renewalScheduler != null) {
                renewalScheduler.shutdown();
            }
            factory.destroy();
        }
    }

    /** lock4j's {@code LockTemplate} over its RedisTemplate executor, with lock4j's default properties. */
    static final class Lock4j implements LockUnderTest {
        private final JedisConnectionFactory factory = springJedisFactory();
        private final LockTemplate template = new LockTemplate();

        Lock4j() {
            StringRedisTemplate redis = new StringRedisTemplate(factory);
            redis.afterPropertiesSet();
            Lock4jProperties properties = new Lock4jProperties();
            template.setProperties(properties);
            template.setExecutors(List.of(new RedisTemplateLockExecutor(redis, properties)));
            try {
                template.afterPropertiesSet();
            } catch (Exception e) {
                throw new IllegalStateException("lock4j LockTemplate did not initialise", e);
            }
        }

        @Override
        public String name() {
            return "lock4j";
        }

        @Override
        public AutoCloseable lock(String key) {
            LockInfo info = template.lock(storeKey(key), 30_000, WAIT.toMillis());
            if (info == null) {
                throw new IllegalStateException("lock4j: " + key + " not acquired within " + WAIT);
            }
            return () -> template.releaseLock(info);
        }

        @Override
        public boolean renewsLeases() {
            return false;
        }

        @Override
        public String storeKey(String key) {
            return "lock4j:" + key;
        }

        @Override
        public void close() {
            factory.destroy();
        }
    }

    /** ShedLock's Spring Data Redis provider with its defaults; a held key is retried every millisecond. */
    static final class ShedLock implements LockUnderTest {
        private static final Duration LOCK_AT_MOST_FOR = Duration.ofSeconds(30);
        private final String name;
        private final JedisConnectionFactory factory = springJedisFactory();
        private final RedisLockProvider provider = new RedisLockProvider(factory);

        ShedLock(String name) {
            this.name = name;
        }

        @Override
        public String name() {
            return name;
        }

        @Override
        public AutoCloseable lock(String key) throws InterruptedException {
            long deadline = System.nanoTime() + WAIT.toNanos();
            while (true) {
                Optional<SimpleLock> lock = provider.lock(new LockConfiguration(Instant.now(), key, LOCK_AT_MOST_FOR, Duration.ZERO));
                if (lock.isPresent()) {
                    return lock.get()::unlock;
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException(name + ": " + key + " not acquired within " + WAIT);
                }
                TimeUnit.MILLISECONDS.sleep(1);
            }
        }

        @Override
        public boolean renewsLeases() {
            return false;
        }

        @Override
        public String storeKey(String key) {
            // The provider's default key prefix and environment.
            return "job-lock:default:" + key;
        }

        @Override
        public void close() {
            factory.destroy();
        }
    }
}
