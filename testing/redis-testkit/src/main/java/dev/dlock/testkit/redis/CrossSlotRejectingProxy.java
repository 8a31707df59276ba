package dev.dlock.testkit.redis;

import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;

import redis.clients.jedis.util.JedisClusterCRC16;

/**
 * A loopback RESP proxy in front of a standalone Redis that behaves like a cluster proxy (Envoy,
 * twemproxy-style): any {@code EVAL}/{@code EVALSHA} whose keys hash to more than one cluster slot
 * is refused with a {@code CROSSSLOT} error; everything else passes through unchanged. A
 * {@link RespProxy} with one {@link RespProxy#failCommands} fault, so replies stay in request order
 * on a pipelined connection.
 */
public final class CrossSlotRejectingProxy implements AutoCloseable {

    private static final String REFUSAL =
            "CROSSSLOT Keys in request do not hash to the same slot (dlock test proxy)";

    private final RespProxy proxy;
    private final AtomicLong scripts = new AtomicLong();
    private final RespProxy.Rule refusal;

    private CrossSlotRejectingProxy(RespProxy proxy) {
        this.proxy = proxy;
        this.refusal = proxy.failCommands(this::spansSeveralSlots, REFUSAL);
    }

    /** Starts the proxy on a free loopback port, forwarding to {@code upstream}. */
    public static CrossSlotRejectingProxy start(RedisServerProcess upstream) {
        return new CrossSlotRejectingProxy(RespProxy.start(upstream));
    }

    /** Always {@code 127.0.0.1}. */
    public String host() {
        return proxy.host();
    }

    /** The port clients connect to. */
    public int port() {
        return proxy.port();
    }

    /** How many scripts were refused for spanning several slots. */
    public long refusedScripts() {
        return refusal.matched();
    }

    /** How many scripts passed through (refused or not). */
    public long scripts() {
        return scripts.get();
    }

    /** Stops accepting and closes every connection. */
    @Override
    public void close() {
        proxy.close();
    }

    private boolean spansSeveralSlots(RespProxy.Command command) {
        String name = command.name();
        if (!name.equals("EVAL") && !name.equals("EVALSHA") || command.size() < 3) {
            return false;
        }
        scripts.incrementAndGet();
        int keyCount = Integer.parseInt(command.text(2));
        Set<Integer> slots = new HashSet<>();
        for (int i = 0; i < keyCount; i++) {
            slots.add(JedisClusterCRC16.getSlot(command.bytes(3 + i)));
        }
        return slots.size() > 1;
    }
}
