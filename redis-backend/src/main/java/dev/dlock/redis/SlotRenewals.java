package dev.dlock.redis;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisNoScriptException;

/**
 * Renews a batch whose keys lie in several cluster slots. A script may only touch one slot, so there
 * is one renew script per slot, and the scripts of one node go out in one pipeline: a batch of one
 * node's leases costs one round trip however many slots it spans. Each key is routed to the node
 * that owns its slot now, so a batch grouped before a failover still reaches the right nodes.
 * Stateless apart from the client; safe for concurrent use.
 */
final class SlotRenewals {

    private final UnifiedJedis client;
    /** The cluster's nodes; null when the client talks to one endpoint (a proxy), which takes one pipeline. */
    private final ClusterNodes nodes;
    private final LuaScript script;

    SlotRenewals(UnifiedJedis client, ClusterNodes nodes, LuaScript script) {
        this.client = client;
        this.nodes = nodes;
        this.script = script;
    }

    /** The renew script's arguments for the keys of one slot, and where each key's answer goes in the batch. */
    static final class SlotBatch {
        final int slot;
        final List<String> keys = new ArrayList<>();
        final List<String> args = new ArrayList<>();
        final List<Integer> positions = new ArrayList<>();

        SlotBatch(int slot) {
            this.slot = slot;
        }

        void add(String lockKey, String owner, long leaseMillis, int position) {
            keys.add(lockKey);
            args.add(owner);
            args.add(Long.toString(leaseMillis));
            positions.add(position);
        }
    }

    /** Runs one renew script per slot batch; returns each script's reply (one code per key), in order. */
    List<List<?>> run(List<SlotBatch> batches) {
        List<List<?>> replies = new ArrayList<>(batches.size());
        List<Integer> all = new ArrayList<>(batches.size());
        for (int i = 0; i < batches.size(); i++) {
            replies.add(null);
            all.add(i);
        }
        if (nodes == null) {
            runPipelined(() -> JedisGeneration.pipelined(client), batches, all, replies);
        } else if (!nodes.knowsSlotOwners()) {
            all.forEach(i -> replies.set(i, runRouted(batches.get(i))));
        } else {
            runOnOwners(batches, all, replies, true);
        }
        return replies;
    }

    private void runOnOwners(List<SlotBatch> batches, List<Integer> indexes, List<List<?>> replies, boolean mayFollow) {
        Map<HostAndPort, List<Integer>> byOwner = new LinkedHashMap<>();
        for (int i : indexes) {
            HostAndPort owner = nodes.slotOwner(batches.get(i).slot);
            if (owner == null) {
                replies.set(i, runRouted(batches.get(i)));
            } else {
                byOwner.computeIfAbsent(owner, o -> new ArrayList<>()).add(i);
            }
        }
        for (Map.Entry<HostAndPort, List<Integer>> entry : byOwner.entrySet()) {
            HostAndPort owner = entry.getKey();
            try {
                runPipelined(() -> nodePipeline(owner), batches, entry.getValue(), replies);
            } catch (JedisConnectionException e) {
                // The node may have failed over: read the slot map once and send the slots that moved to their new owner.
                List<Integer> moved = mayFollow ? movedAway(owner, batches, entry.getValue()) : List.of();
                if (moved.size() < entry.getValue().size()) {
                    throw e;
                }
                runOnOwners(batches, moved, replies, false);
            }
        }
    }

    private List<Integer> movedAway(HostAndPort owner, List<SlotBatch> batches, List<Integer> indexes) {
        nodes.refreshSlotOwners();
        List<Integer> moved = new ArrayList<>();
        for (int i : indexes) {
            if (!owner.equals(nodes.slotOwner(batches.get(i).slot))) {
                moved.add(i);
            }
        }
        return moved;
    }

    @SuppressWarnings("resource")
    private Pipeline nodePipeline(HostAndPort owner) {
        return new Pipeline(nodes.connection(owner), true);
    }

    /**
     * Sends the scripts in one pipeline by SHA-1, and those the node does not know (NOSCRIPT: a restart,
     * a promoted replica) in a second one in full.
     */
    private void runPipelined(Supplier<AbstractPipeline> open, List<SlotBatch> batches, List<Integer> indexes,
                              List<List<?>> replies) {
        List<Integer> unknownScript = sendPipelined(open, batches, indexes, replies, false);
        if (!unknownScript.isEmpty()) {
            sendPipelined(open, batches, unknownScript, replies, true);
        }
    }

    /**
     * One pipeline of scripts; returns those answered NOSCRIPT. A slot the node redirects (it moved) or
     * refuses goes through the client, which follows the slot to its owner.
     */
    private List<Integer> sendPipelined(Supplier<AbstractPipeline> open, List<SlotBatch> batches, List<Integer> indexes,
                                        List<List<?>> replies, boolean fullScript) {
        List<Integer> unknownScript = new ArrayList<>();
        List<Integer> elsewhere = new ArrayList<>();
        try (AbstractPipeline pipeline = open.get()) {
            List<Response<Object>> responses = new ArrayList<>(indexes.size());
            for (int i : indexes) {
                SlotBatch batch = batches.get(i);
                responses.add(fullScript
                        ? pipeline.eval(script.source(), batch.keys, batch.args)
                        : pipeline.evalsha(script.sha1(), batch.keys, batch.args));
            }
            pipeline.sync();
            for (int n = 0; n < indexes.size(); n++) {
                int i = indexes.get(n);
                try {
                    replies.set(i, (List<?>) responses.get(n).get());
                } catch (JedisNoScriptException e) {
                    unknownScript.add(i);
                } catch (JedisDataException e) {
                    elsewhere.add(i);
                }
            }
        }
        for (int i : elsewhere) {
            replies.set(i, runRouted(batches.get(i)));
        }
        return unknownScript;
    }

    private List<?> runRouted(SlotBatch batch) {
        return (List<?>) script.run(client, batch.keys, batch.args);
    }
}
