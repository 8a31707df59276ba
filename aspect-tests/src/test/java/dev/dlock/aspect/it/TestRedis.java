package dev.dlock.aspect.it;

import dev.dlock.core.AcquireResult;
import dev.dlock.core.LeaseRenewal;
import dev.dlock.core.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.ReleaseResult;
import dev.dlock.core.RenewalResult;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.RedisClient;
import redis.clients.jedis.UnifiedJedis;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.List;

/**
 * TEMPORARY until dev.dlock.redis.RedisLockBackend and the testkit's RedisServerProcess land on this
 * branch: one real redis-server for the test run (127.0.0.1, a free port, no persistence) and a
 * minimal compare-owner backend over it. No mocks: every lock goes through the real server.
 */
public final class TestRedis {

    private static final String ACQUIRE = """
            if redis.call('set', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
              return {1, redis.call('incr', KEYS[2])}
            end
            return {0, redis.call('pttl', KEYS[1])}""";
    private static final String RELEASE = """
            if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) return 1 end
            return 0""";
    private static final String RENEW = """
            local v = redis.call('get', KEYS[1])
            if v == ARGV[1] then redis.call('pexpire', KEYS[1], ARGV[2]) return 1 end
            if v then return 2 end
            return 0""";

    private static TestRedis shared;

    private final Process process;
    private final int port;

    private TestRedis(Process process, int port) {
        this.process = process;
        this.port = port;
    }

    /** The server shared by every test of the run, started on first use and stopped at JVM exit. */
    public static synchronized TestRedis shared() {
        if (shared == null) {
            shared = start();
            Runtime.getRuntime().addShutdownHook(new Thread(shared.process::destroy));
        }
        return shared;
    }

    private static TestRedis start() {
        try {
            int port;
            try (ServerSocket socket = new ServerSocket(0)) {
                port = socket.getLocalPort();
            }
            Process process = new ProcessBuilder("redis-server", "--port", String.valueOf(port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no")
                    .redirectErrorStream(true).redirectOutput(new File(System.getProperty("java.io.tmpdir"), "dlock-aspect-redis-" + port + ".log"))
                    .start();
            long deadline = System.nanoTime() + 10_000_000_000L;
            while (true) {
                try (UnifiedJedis probe = RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", port)).build()) {
                    probe.ping();
                    return new TestRedis(process, port);
                } catch (RuntimeException e) {
                    if (System.nanoTime() > deadline || !process.isAlive()) {
                        process.destroy();
                        throw new IllegalStateException("redis-server did not start on port " + port, e);
                    }
                    Thread.sleep(20);
                }
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot start redis-server (is it on PATH?)", e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /** A new client of the server. */
    public UnifiedJedis client() {
        return RedisClient.builder().hostAndPort(new HostAndPort("127.0.0.1", port)).build();
    }

    /** A new backend over {@code client}. */
    public static LockBackend backend(UnifiedJedis client) {
        return new ScriptBackend(client);
    }

    private record ScriptBackend(UnifiedJedis client) implements LockBackend {

        @Override
        public AcquireResult tryAcquire(String key, String owner, long leaseMillis) {
            try {
                List<?> reply = (List<?>) client.eval(ACQUIRE, List.of("it:" + key, "it:" + key + ":fence"),
                        List.of(owner, String.valueOf(leaseMillis)));
                long flag = (Long) reply.get(0);
                long value = (Long) reply.get(1);
                return flag == 1 ? new AcquireResult.Acquired(value) : new AcquireResult.Held(value);
            } catch (RuntimeException e) {
                throw new LockBackendException("acquire failed", e);
            }
        }

        @Override
        public ReleaseResult release(String key, String owner) {
            try {
                Object reply = client.eval(RELEASE, List.of("it:" + key), List.of(owner));
                return Long.valueOf(1).equals(reply) ? ReleaseResult.RELEASED : ReleaseResult.NOT_OWNER;
            } catch (RuntimeException e) {
                throw new LockBackendException("release failed", e);
            }
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            List<RenewalResult> results = new ArrayList<>(batch.size());
            for (LeaseRenewal renewal : batch) {
                Object reply = client.eval(RENEW, List.of("it:" + renewal.key()),
                        List.of(renewal.owner(), String.valueOf(renewal.leaseMillis())));
                long code = (Long) reply;
                results.add(code == 1 ? RenewalResult.RENEWED : code == 2 ? RenewalResult.TAKEN : RenewalResult.EXPIRED);
            }
            return results;
        }

        @Override
        public long ping() {
            long start = System.nanoTime();
            client.ping();
            return System.nanoTime() - start;
        }
    }
}
