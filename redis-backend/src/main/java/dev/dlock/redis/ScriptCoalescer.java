package dev.dlock.redis;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * Runs the scripts and commands that several threads send to one Redis node at the same moment as one pipeline (a
 * group commit): one connection, one write, one read. A lone caller runs its call at once on its own thread and pays
 * nothing; callers that arrive while a batch is in flight queue, and the first of them sends the next batch. On a
 * cluster there is one queue per node; {@value #MIN_BATCH_SCRIPT_CALLS} or more scripts go as one call of the
 * {@link LuaScript.Batch batch script}. NOSCRIPT and redirected calls are run again by their own callers; a failed
 * connection fails the whole batch. Details: docs/stores.md#redis-round-trips-and-commands.
 */
final class ScriptCoalescer {

    private static final Logger log = LoggerFactory.getLogger(ScriptCoalescer.class);

    /** The most calls one pipeline carries; the rest wait for the next one. */
    static final int MAX_BATCH = 128;
    /**
     * The most batches in flight to one node at once, each on its own pooled connection (a lane). A caller takes an
     * idle lane in use and goes straight through; only when every lane in use is busy does it queue. How many lanes
     * are in use follows how many callers are in the coalescer for the node at that moment: all of them up to
     * {@link #FEW_CALLERS} callers, then fewer in proportion (half at twice as many), down to {@link #MIN_LANES_IN_USE}.
     * Few callers rarely share a round trip, and waiting for a lane costs them more than the batch saves; many
     * callers fill the lanes anyway, and fewer, larger batches cost Redis and the client less per call. Measured
     * with {@code CoalescerLanes} on a quiet machine (uncontended lock + unlock pairs, 5 alternating rounds, x raw
     * Jedis at 8 / 64 threads): 2 lanes 0.57 / 1.32, 4 lanes 0.77 / 1.51, 8 lanes 0.84 / 1.31, this rule 0.83 / 1.51
     * (docs/benchmarks.md).
     */
    static final int LANES_PER_NODE = 8;
    /**
     * The fewest lanes in use, however many callers queue: with 2, each of the two large batches waits for the one
     * before on its lane, and the client and Redis sit idle meanwhile (1.32x raw Jedis at 64 threads against 1.51x).
     */
    static final int MIN_LANES_IN_USE = 4;
    /** Up to this many callers in the coalescer for one node at once, every lane is in use. */
    static final int FEW_CALLERS = 16;
    /**
     * The fewest scripts of one slot that go as one call of the batch script; fewer go as EVALSHAs of their own in
     * the pipeline. A batch script call costs Redis a fixed few µs more than an EVALSHA (its reply table, the
     * unpacking) and saves a little per script it carries (the command's parsing and the Lua entry). Measured with
     * {@code BatchScriptCost} (Redis CPU per acquire + release pair, pipelined both ways, batch / separate): Redis
     * 7.0 0.99 for 4 pairs, 0.94 for 8, 0.88 for 16, 0.85 for 32; Redis 6.2 1.09, 1.07, 1.02, 0.92.
     */
    static final int MIN_BATCH_SCRIPT_CALLS = 8;

    private final UnifiedJedis client;
    /** The cluster's nodes; null when the client talks to one endpoint (standalone, Sentinel, a proxy). */
    private final ClusterNodes nodes;
    /**
     * Whether the scripts of a batch are grouped by slot: on a cluster, and behind a proxy in front of one
     * (cluster mode on a plain client); switched on when a proxy refuses a batch as CROSSSLOT.
     */
    private volatile boolean bySlot;
    private final int minLanes;
    private final int maxLanes;
    private final Node single;
    private final ConcurrentHashMap<HostAndPort, Node> byNode = new ConcurrentHashMap<>();

    /** Coalesces over {@code client}: by node of {@code nodes} (null off a cluster), scripts grouped by slot when {@code bySlot}. */
    ScriptCoalescer(UnifiedJedis client, ClusterNodes nodes, boolean bySlot) {
        this(client, nodes, bySlot, MIN_LANES_IN_USE, LANES_PER_NODE);
    }

    /** As above with always {@code lanes} lanes in use (tests choose one, to know which calls share a batch). */
    ScriptCoalescer(UnifiedJedis client, ClusterNodes nodes, boolean bySlot, int lanes) {
        this(client, nodes, bySlot, lanes, lanes);
    }

    /** As above with between {@code minLanes} and {@code maxLanes} lanes in use (benchmarks compare them). */
    ScriptCoalescer(UnifiedJedis client, ClusterNodes nodes, boolean bySlot, int minLanes, int maxLanes) {
        if (minLanes < 1 || maxLanes < minLanes) {
            throw new IllegalArgumentException("lanes must be at least 1, and minLanes at most maxLanes; got minLanes "
                    + minLanes + ", maxLanes " + maxLanes);
        }
        this.client = client;
        this.nodes = nodes;
        this.bySlot = bySlot || nodes != null;
        this.minLanes = minLanes;
        this.maxLanes = maxLanes;
        this.single = nodes == null ? new Node(null) : null;
    }

    /** Runs {@code script} on the node of {@code slot}, in a pipeline with concurrent callers' calls. */
    Object run(LuaScript script, int slot, List<String> keys, List<String> args) {
        return submit(new ScriptCall(slot, script, keys, args));
    }

    /**
     * {@code SET key value NX PX leaseMillis} on the node of {@code slot}, in a pipeline with concurrent callers'
     * calls: "OK" when set, null when the key exists.
     */
    String setIfAbsent(int slot, String key, String value, long leaseMillis) {
        return (String) submit(new SetIfAbsent(slot, key, value, leaseMillis));
    }

    private Object submit(Call call) {
        Node node = single;
        if (node == null) {
            HostAndPort owner = nodes.knowsSlotOwners() ? nodes.slotOwner(call.slot) : null;
            if (owner == null) {
                return call.runThroughClient(client);
            }
            node = byNode.computeIfAbsent(owner, Node::new);
        }
        int callers = node.callers.incrementAndGet();
        try {
            node.pick(callers).run(call);
        } finally {
            node.callers.decrementAndGet();
        }
        return call.outcome();
    }

    /** The lanes to one node, and how many callers are in the coalescer for it. */
    private final class Node {
        private final Lane[] lanes = new Lane[maxLanes];
        private final AtomicInteger callers = new AtomicInteger();

        Node(HostAndPort address) {
            for (int i = 0; i < lanes.length; i++) {
                lanes[i] = new Lane(address);
            }
        }

        /**
         * An idle lane in use if there is one (the call then goes straight out), else the caller's own lane, to queue
         * on; {@code callers} (this one included) tell how many lanes are in use ({@link #LANES_PER_NODE}).
         */
        Lane pick(int callers) {
            int inUse = Math.max(minLanes, Math.min(maxLanes, maxLanes * FEW_CALLERS / callers));
            int home = (int) (Thread.currentThread().getId() % inUse);
            for (int i = 0; i < inUse; i++) {
                Lane lane = lanes[(home + i) % inUse];
                if (!lane.sending.get() && lane.waiting.isEmpty()) {
                    return lane;
                }
            }
            return lanes[home];
        }
    }

    /** One queued call (a script or a plain command) and, once its batch is answered, its reply or failure. */
    private abstract static class Call {
        final int slot;
        final Thread caller = Thread.currentThread();
        /** Its reply in the pipeline, when it went as a command of its own. */
        Response<?> response;
        private Object reply;
        private RuntimeException failure;
        /** The node answered with an error the client can mend (NOSCRIPT, MOVED, ASK): the caller runs it itself. */
        private boolean runAlone;
        private volatile boolean done;

        Call(int slot) {
            this.slot = slot;
        }

        /** Sends it through the client, on the caller's thread: alone, or again after an error the client mends. */
        abstract Object runThroughClient(UnifiedJedis client);

        /** Adds it to {@code pipeline} as a command of its own. */
        abstract Response<?> queueIn(AbstractPipeline pipeline);

        /** Takes its reply from {@link #response} once the pipeline is read. */
        void settle() {
            try {
                answer(response.get());
            } catch (JedisDataException e) {
                if (clientMends(e)) {
                    runAlone();
                } else {
                    fail(e);
                }
            } catch (JedisException e) {
                fail(e);
            }
        }

        void answer(Object value) {
            reply = value;
            finish();
        }

        void fail(RuntimeException e) {
            failure = e;
            finish();
        }

        void runAlone() {
            runAlone = true;
            finish();
        }

        private void finish() {
            done = true;
            if (caller != Thread.currentThread()) {
                LockSupport.unpark(caller);
            }
        }

        boolean done() {
            return done;
        }

        Object outcome() {
            if (failure != null) {
                throw failure;
            }
            return reply;
        }
    }

    /** A script with its keys and arguments. */
    private static final class ScriptCall extends Call {
        final LuaScript script;
        final List<String> keys;
        final List<String> args;

        ScriptCall(int slot, LuaScript script, List<String> keys, List<String> args) {
            super(slot);
            this.script = script;
            this.keys = keys;
            this.args = args;
        }

        @Override
        Object runThroughClient(UnifiedJedis client) {
            return script.run(client, keys, args);
        }

        @Override
        Response<?> queueIn(AbstractPipeline pipeline) {
            return pipeline.evalsha(script.sha1(), keys, args);
        }
    }

    /** {@code SET key value NX PX lease}. */
    private static final class SetIfAbsent extends Call {
        final String key;
        final String value;
        final SetParams params;

        SetIfAbsent(int slot, String key, String value, long leaseMillis) {
            super(slot);
            this.key = key;
            this.value = value;
            this.params = JedisGeneration.setIfAbsent(leaseMillis);
        }

        @Override
        Object runThroughClient(UnifiedJedis client) {
            return client.set(key, value, params);
        }

        @Override
        Response<?> queueIn(AbstractPipeline pipeline) {
            return pipeline.set(key, value, params);
        }
    }

    /** One queue to a node, and whether a batch is in flight on it. */
    private final class Lane {
        /** The node whose pool a batch borrows its connection from; null for the client's only endpoint. */
        private final HostAndPort node;
        private final ConcurrentLinkedQueue<Call> waiting = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean sending = new AtomicBoolean();
        /**
         * The batch script this lane last ran on its node, which therefore caches it: sent by SHA-1; any other is
         * sent in full (EVAL caches it). Only the thread sending a batch touches it.
         */
        private LuaScript.Batch cached;

        Lane(HostAndPort node) {
            this.node = node;
        }

        void run(Call call) {
            waiting.add(call);
            boolean interrupted = false;
            while (true) {
                if (sending.compareAndSet(false, true)) {
                    List<Call> batch = List.of();
                    try {
                        if (!call.done()) {
                            batch = drain();
                            send(batch);
                        }
                    } finally {
                        sending.set(false);
                        for (Call unanswered : batch) {
                            if (!unanswered.done()) {
                                unanswered.fail(new IllegalStateException("dlock: a coalesced Redis batch ended without an answer"));
                            }
                        }
                    }
                    // Whoever queued while this batch was in flight failed to send it; wake the first of them to do so.
                    Call next = waiting.peek();
                    if (next != null && next != call) {
                        LockSupport.unpark(next.caller);
                    }
                    if (!call.done()) {
                        // More than one batch was waiting ahead of this call: send the next one too.
                        continue;
                    }
                }
                if (call.done()) {
                    break;
                }
                LockSupport.park(this);
                // park returns at once while the interrupt flag is set: keep it aside until the answer is in.
                interrupted |= Thread.interrupted();
            }
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
            if (call.runAlone) {
                call.reply = call.runThroughClient(client);
            }
        }

        private List<Call> drain() {
            List<Call> batch = new ArrayList<>();
            Call next;
            while (batch.size() < MAX_BATCH && (next = waiting.poll()) != null) {
                batch.add(next);
            }
            return batch;
        }

        private void send(List<Call> batch) {
            if (batch.size() == 1) {
                Call only = batch.get(0);
                try {
                    only.answer(only.runThroughClient(client));
                } catch (RuntimeException e) {
                    only.fail(e);
                }
                return;
            }
            LuaScript.Batch batchScript = LuaScript.batch();
            List<Call> alone = new ArrayList<>(batch.size());
            Map<Integer, List<ScriptCall>> groups = new LinkedHashMap<>();
            boolean grouped = bySlot;
            for (Call call : batch) {
                if (call instanceof ScriptCall script && batchScript.takes(script.script, script.keys, script.args)) {
                    groups.computeIfAbsent(grouped ? call.slot : 0, slot -> new ArrayList<>()).add(script);
                } else {
                    alone.add(call);
                }
            }
            List<List<ScriptCall>> together = new ArrayList<>(groups.size());
            for (List<ScriptCall> group : groups.values()) {
                if (group.size() < MIN_BATCH_SCRIPT_CALLS) {
                    alone.addAll(group);
                } else {
                    together.add(group);
                }
            }
            List<Response<Object>> replies = new ArrayList<>(together.size());
            try (AbstractPipeline pipeline = open()) {
                for (Call call : alone) {
                    call.response = call.queueIn(pipeline);
                }
                for (List<ScriptCall> group : together) {
                    replies.add(queueTogether(pipeline, batchScript, group));
                }
                pipeline.sync();
            } catch (RuntimeException e) {
                if (node != null) {
                    // The node may have failed over; the client refreshes its slot map only on its own calls, so ask
                    // for it here, or the next batches would go to the dead node until a lone call went through.
                    refreshSlotOwners();
                }
                for (Call call : batch) {
                    if (!call.done()) {
                        call.fail(e);
                    }
                }
                return;
            }
            for (Call call : alone) {
                call.settle();
            }
            for (int i = 0; i < together.size(); i++) {
                settleTogether(batchScript, together.get(i), replies.get(i));
            }
        }

        private Response<Object> queueTogether(AbstractPipeline pipeline, LuaScript.Batch batchScript, List<ScriptCall> group) {
            LuaScript.Batch.Calls calls = batchScript.calls();
            for (ScriptCall call : group) {
                calls.add(call.script, call.keys, call.args);
            }
            return batchScript == cached ? pipeline.evalsha(batchScript.sha1(), calls.keys(), calls.args())
                    : pipeline.eval(batchScript.source(), calls.keys(), calls.args());
        }

        /** Gives each call of a batch script its own entry of the reply, or the error that stopped the whole call. */
        private void settleTogether(LuaScript.Batch batchScript, List<ScriptCall> group, Response<Object> response) {
            Object reply;
            try {
                reply = response.get();
            } catch (JedisDataException e) {
                String message = String.valueOf(e.getMessage());
                if (message.startsWith("NOSCRIPT")) {
                    cached = null;
                }
                boolean crossSlot = message.startsWith("CROSSSLOT");
                if (crossSlot && !bySlot) {
                    bySlot = true;
                    log.info("Redis refused a batch of scripts on several slots (CROSSSLOT: a proxy in front of a "
                            + "cluster?); batches are now grouped by slot. Build the store with cluster(true) for such a proxy.");
                }
                for (ScriptCall call : group) {
                    if (crossSlot || clientMends(e)) {
                        // The batch script ran none of them: each caller runs its own.
                        call.runAlone();
                    } else {
                        call.fail(e);
                    }
                }
                return;
            } catch (JedisException e) {
                group.forEach(call -> call.fail(e));
                return;
            }
            cached = batchScript;
            if (!(reply instanceof List<?> entries) || entries.size() != group.size()) {
                JedisException unexpected = new JedisException("dlock: the batch script answered " + reply + " for "
                        + group.size() + " calls");
                group.forEach(call -> call.fail(unexpected));
                return;
            }
            for (int i = 0; i < group.size(); i++) {
                Object entry = entries.get(i);
                if (entry instanceof JedisDataException error) {
                    group.get(i).fail(error);
                } else {
                    group.get(i).answer(entry);
                }
            }
        }

        @SuppressWarnings("resource")
        private AbstractPipeline open() {
            return node == null ? JedisGeneration.pipelined(client) : new Pipeline(nodes.connection(node), true);
        }
    }

    private void refreshSlotOwners() {
        try {
            nodes.refreshSlotOwners();
        } catch (RuntimeException e) {
            // No node answers yet; the callers' next attempts ask again.
        }
    }

    /** NOSCRIPT (the client resends the script in full) and MOVED/ASK (the client follows the slot). */
    private static boolean clientMends(JedisDataException e) {
        String message = e.getMessage();
        return message != null && (message.startsWith("NOSCRIPT") || message.startsWith("MOVED") || message.startsWith("ASK"));
    }
}
