package dev.dlock.boot;

import redis.clients.jedis.UnifiedJedis;

import java.util.List;

/** The clients of the Redlock masters the starter created; closed with the context (the backend never closes them). */
public final class RedlockClients implements AutoCloseable {

    private final List<UnifiedJedis> clients;

    RedlockClients(List<UnifiedJedis> clients) {
        this.clients = List.copyOf(clients);
    }

    /** One client per master, in the order of {@code dlock.redis.redlock.nodes}. */
    public List<UnifiedJedis> clients() {
        return clients;
    }

    /** Closes every client. */
    @Override
    public void close() {
        clients.forEach(UnifiedJedis::close);
    }
}
