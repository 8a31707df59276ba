package dev.dlock.integration;

import dev.dlock.core.spi.LockBackend;
import dev.dlock.redis.RedisLockBackend;
import dev.dlock.testkit.redis.RedisServerExtension;
import org.junit.jupiter.api.extension.RegisterExtension;
import redis.clients.jedis.RedisClient;

import java.util.ArrayList;
import java.util.List;

/** The registry's Lock contract on a real Redis: each lock manager has a client of its own, as two JVMs would. */
class RedisLockRegistryTest extends LockRegistryContract {

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final List<RedisClient> clients = new ArrayList<>();

    @Override
    protected LockBackend newBackend() {
        RedisClient client = RedisClient.create(redis.server().host(), redis.server().port());
        clients.add(client);
        return RedisLockBackend.builder(client).build();
    }

    @Override
    protected void closeClients() {
        clients.forEach(RedisClient::close);
    }
}
