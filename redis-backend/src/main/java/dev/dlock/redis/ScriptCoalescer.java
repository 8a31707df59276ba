package dev.dlock.redis;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.locks.LockSupport;

import redis.clients.jedis.AbstractPipeline;
import redis.clients.jedis.HostAndPort;
import redis.clients.jedis.Pipeline;
import redis.clients.jedis.Response;
import redis.clients.jedis.UnifiedJedis;
import redis.clients.jedis.exceptions.JedisDataException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.params.SetParams;

/**
 * Runs the scripts that several threads send to one Redis node at the same moment as one pipeline: one
 * connection, one write of every waiting script, one read of their replies (a group commit). A caller that
 * finds no batch in flight runs its script at once on its own thread, so a lone caller pays nothing for
 * the coalescing; callers that arrive while a batch is in flight queue, and the first of them sends the
 * next batch for all of them when the current one is answered. On a cluster there is one such queue per
 * node (the master the client's slot cache names); a script whose node is unknown goes straight through.
 *
 * <p>A script that comes back NOSCRIPT (the node restarted or was promoted) or redirected (its slot moved)
 * is run again by its own caller through the client, which sends it in full or follows the slot. A
 * connection that fails during a batch fails every script of the batch, as it would have failed each
 * caller's own round trip: every caller already treats such a failure as "may or may not have run".
 */
final class ScriptCoalescer {

    /** The most scripts one pipeline carries; the rest wait for the next one. */
    static final int MAX_BATCH = 128;
    /**
     * Batches in flight to one node at once, each on its own pooled connection. A caller takes an idle lane and
     * goes straight through; only when every lane is busy does it queue. One lane alone made 8 threads slower than
     * no coalescing (each batch waited for the one before it), so a few run side by side.
     */
    static final int LANES_PER_NODE = 8;

    private final UnifiedJedis client;
    /** The cluster's nodes; null when the client talks to one endpoint (standalone, Sentinel, a proxy). */
    private final ClusterNodes nodes;
    private final Lane[] single;
    private final ConcurrentHashMap<HostAndPort, Lane[]> byNode = new ConcurrentHashMap<>();

    ScriptCoalescer(UnifiedJedis client, ClusterNodes nodes) {
        this.client = client;
        this.nodes = nodes;
        this.single = nodes == null ? lanes(null) : null;
    }

    /** Runs {@code script} on the node of {@code slot} (ignored off a cluster), in a pipeline with concurrent callers' scripts. */
    Object run(LuaScript script, int slot, List<String> keys, List<String> args) {
        Lane[] lanes = single;
        if (lanes == null) {
            HostAndPort owner = nodes.knowsSlotOwners() ? nodes.slotOwner(slot) : null;
            if (owner == null) {
                return script.run(client, keys, args);
            }
            lanes = byNode.computeIfAbsent(owner, this::lanes);
        }
        Call call = new Call(script, keys, args);
        pick(lanes).run(call);
        return call.outcome();
    }

    /**
     * {@code SET key value NX PX leaseMillis} on the node of {@code slot} (ignored off a cluster): "OK" when set, null
     * when the key exists. Sent on its own for now.
     */
    String setIfAbsent(int slot, String key, String value, long leaseMillis) {
        return client.set(key, value, SetParams.setParams().nx().px(leaseMillis));
    }

    private Lane[] lanes(HostAndPort node) {
        Lane[] lanes = new Lane[LANES_PER_NODE];
        for (int i = 0; i < lanes.length; i++) {
            lanes[i] = new Lane(node);
        }
        return lanes;
    }

    /** An idle lane if there is one (the call then goes straight out), else the caller's own lane, to queue on. */
    private static Lane pick(Lane[] lanes) {
        int home = (int) (Thread.currentThread().getId() % lanes.length);
        for (int i = 0; i < lanes.length; i++) {
            Lane lane = lanes[(home + i) % lanes.length];
            if (!lane.sending.get() && lane.waiting.isEmpty()) {
                return lane;
            }
        }
        return lanes[home];
    }

    /** One queued script and, once its batch is answered, its reply or failure. */
    private static final class Call {
        final LuaScript script;
        final List<String> keys;
        final List<String> args;
        final Thread caller = Thread.currentThread();
        private Object reply;
        private RuntimeException failure;
        /** The node answered with an error the client can mend (NOSCRIPT, MOVED, ASK): the caller runs it itself. */
        private boolean runAlone;
        private volatile boolean done;

        Call(LuaScript script, List<String> keys, List<String> args) {
            this.script = script;
            this.keys = keys;
            this.args = args;
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

    /** One queue to a node, and whether a batch is in flight on it. */
    private final class Lane {
        /** The node whose pool a batch borrows its connection from; null for the client's only endpoint. */
        private final HostAndPort node;
        private final ConcurrentLinkedQueue<Call> waiting = new ConcurrentLinkedQueue<>();
        private final AtomicBoolean sending = new AtomicBoolean();

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
                call.reply = call.script.run(client, call.keys, call.args);
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
                    only.answer(only.script.run(client, only.keys, only.args));
                } catch (RuntimeException e) {
                    only.fail(e);
                }
                return;
            }
            List<Response<Object>> replies = new ArrayList<>(batch.size());
            try (AbstractPipeline pipeline = open()) {
                for (Call call : batch) {
                    replies.add(pipeline.evalsha(call.script.sha1(), call.keys, call.args));
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
            for (int i = 0; i < batch.size(); i++) {
                Call call = batch.get(i);
                try {
                    call.answer(replies.get(i).get());
                } catch (JedisDataException e) {
                    if (clientMends(e)) {
                        call.runAlone();
                    } else {
                        call.fail(e);
                    }
                } catch (JedisException e) {
                    call.fail(e);
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
