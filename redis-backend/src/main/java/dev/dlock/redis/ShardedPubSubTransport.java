package dev.dlock.redis;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import redis.clients.jedis.Connection;
import redis.clients.jedis.ConnectionPool;
import redis.clients.jedis.Jedis;
import redis.clients.jedis.JedisShardedPubSub;
import redis.clients.jedis.Protocol;
import redis.clients.jedis.exceptions.JedisConnectionException;
import redis.clients.jedis.exceptions.JedisException;
import redis.clients.jedis.util.JedisClusterCRC16;
import redis.clients.jedis.util.SafeEncoder;

/**
 * Release channels over sharded pub/sub (Redis 7+ cluster): {@code SSUBSCRIBE} only reaches the
 * node that owns the channel's slot, so there is one subscriber connection per node that currently
 * carries a wanted channel, each read by its own daemon thread, plus one "placer" thread that
 * resolves slot owners ({@code CLUSTER SLOTS}) and hands channels to node connections.
 *
 * <p>When a node connection fails, or the server drops a channel ({@code sunsubscribe} push after
 * its slot moved), the affected channels are reported lost, the slot map is read again and the
 * channels are placed anew after a bounded backoff.
 *
 * <p>A node connection is written to only while its read loop runs ({@link NodeSession#live}) and
 * not after the write that unsubscribes its last channel ({@link NodeSession#closing}): Jedis leaves
 * the read loop when the subscription count reaches zero, and a reply sent after that would stay
 * unread. A connection that may hold unread replies is destroyed instead of returned to the pool.
 */
final class ShardedPubSubTransport implements PubSubTransport {

    private static final Logger log = LoggerFactory.getLogger(ShardedPubSubTransport.class);

    private final ClusterNodes cluster;
    private final PubSubReleaseNotices notices;
    private final Object monitor;

    /** Everything below is guarded by {@link #monitor}. */
    private final Map<String, NodeSession> sessions = new HashMap<>();
    private final Map<String, NodeSession> placement = new HashMap<>();
    private final Set<String> unplaced = new LinkedHashSet<>();
    /** Node address ("host:port") owning each slot; null when unknown or stale. */
    private String[] slotOwners;
    private boolean placementDue;
    private final ReconnectBackoff backoff = new ReconnectBackoff();
    private long nextAttemptNanos = System.nanoTime();
    private Thread placer;

    /** Carries the channels of {@code notices} over connections to the nodes of {@code cluster}. */
    ShardedPubSubTransport(ClusterNodes cluster, PubSubReleaseNotices notices) {
        this.cluster = cluster;
        this.notices = notices;
        this.monitor = notices.monitor();
    }

    /** Queues {@code channel} for the placer; the first call starts the placer thread. */
    @Override
    public void channelWanted(String channel) {
        unplaced.add(channel);
        placementDue = true;
        if (placer == null) {
            placer = NoticeThreads.start("dlock-redis-sharded-notices", this::runPlacer);
        }
        monitor.notifyAll();
    }

    /** Unsubscribes {@code channel} from the node it was placed on, if any. */
    @Override
    public void channelUnwanted(String channel) {
        if (unplaced.remove(channel)) {
            return;
        }
        NodeSession session = placement.remove(channel);
        if (session != null) {
            session.channels.remove(channel);
            session.unsubscribe(channel);
        }
    }

    /** Unsubscribes every node connection and stops every thread; waits a bounded time for each to end. */
    @Override
    public void close() {
        List<Thread> threads = new ArrayList<>();
        synchronized (monitor) {
            for (NodeSession session : sessions.values()) {
                session.unsubscribeAll();
                threads.add(session.thread);
            }
            threads.add(placer);
        }
        threads.forEach(NoticeThreads::awaitEnd);
    }

    /** Node connections open now, by node address; for tests. */
    int openSessions() {
        synchronized (monitor) {
            return sessions.size();
        }
    }

    private void runPlacer() {
        while (awaitPlacementDue()) {
            String[] owners;
            synchronized (monitor) {
                owners = slotOwners;
            }
            if (owners == null) {
                try {
                    owners = readSlotOwners();
                } catch (RuntimeException e) {
                    placementFailed("cannot read the slot map: " + e);
                    continue;
                }
                synchronized (monitor) {
                    slotOwners = owners;
                }
            }
            placeUnplaced(owners);
        }
        log.debug("Sharded release notice placer stopped");
    }

    /** Waits until channels wait for a node and no backoff is running; false once closed. */
    private boolean awaitPlacementDue() {
        synchronized (monitor) {
            while (!notices.isClosed()) {
                long wait = nextAttemptNanos - System.nanoTime();
                if (placementDue && !unplaced.isEmpty() && wait <= 0) {
                    placementDue = false;
                    return true;
                }
                notices.awaitNotified(placementDue && !unplaced.isEmpty() ? wait : Long.MAX_VALUE);
            }
            return false;
        }
    }

    /** Subscribes each waiting channel on its owner's live connection, or opens a connection to the owner. */
    private void placeUnplaced(String[] owners) {
        String failure = null;
        List<String> unknownToClient = new ArrayList<>();
        synchronized (monitor) {
            if (notices.isClosed()) {
                return;
            }
            Map<String, List<String>> toOpen = new LinkedHashMap<>();
            Map<NodeSession, List<String>> toSubscribe = new LinkedHashMap<>();
            for (String name : unplaced) {
                String owner = owners[JedisClusterCRC16.getSlot(name)];
                if (owner == null) {
                    failure = "no node owns the slot of '" + name + "'";
                    continue;
                }
                NodeSession session = sessions.get(owner);
                if (session == null) {
                    // SSUBSCRIBE takes channels of one slot only: open with the first slot, add the rest once live.
                    List<String> first = toOpen.computeIfAbsent(owner, o -> new ArrayList<>());
                    if (first.isEmpty() || sameSlot(first.get(0), name)) {
                        first.add(name);
                    }
                } else if (session.live && !session.closing) {
                    toSubscribe.computeIfAbsent(session, s -> new ArrayList<>()).add(name);
                }
                // A session still connecting or closing: placed again when its state changes.
            }
            Map<String, ConnectionPool> pools = toOpen.isEmpty() ? Map.of() : cluster.pools();
            for (Map.Entry<String, List<String>> entry : toOpen.entrySet()) {
                ConnectionPool pool = pools.get(entry.getKey());
                if (pool == null) {
                    failure = "the cluster client does not know node " + entry.getKey() + " yet";
                    unknownToClient.add(entry.getValue().get(0));
                    continue;
                }
                NodeSession session = new NodeSession(entry.getKey(), pool);
                sessions.put(session.address, session);
                assign(session, entry.getValue());
                session.start();
            }
            for (Map.Entry<NodeSession, List<String>> entry : toSubscribe.entrySet()) {
                assign(entry.getKey(), entry.getValue());
                entry.getKey().subscribe(entry.getValue());
            }
        }
        // The cluster client learns a new slot owner when one of its own commands is redirected or fails.
        unknownToClient.forEach(cluster::followSlotOwner);
        if (failure != null) {
            placementFailed(failure);
        }
    }

    private static boolean sameSlot(String channel, String other) {
        return JedisClusterCRC16.getSlot(channel) == JedisClusterCRC16.getSlot(other);
    }

    private void assign(NodeSession session, List<String> names) {
        for (String name : names) {
            unplaced.remove(name);
            placement.put(name, session);
            session.channels.add(name);
        }
    }

    /** Forgets the slot map and retries the placement after the next backoff step. */
    private void placementFailed(String why) {
        synchronized (monitor) {
            if (notices.isClosed()) {
                return;
            }
            long delayMillis = backoff.next();
            log.warn("Sharded release notices: {}; retrying in {} ms", why, delayMillis);
            slotOwners = null;
            placementDue = true;
            nextAttemptNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(delayMillis);
        }
    }

    /** The owner address of every slot, from the first node that answers {@code CLUSTER SLOTS}. */
    private String[] readSlotOwners() {
        JedisException last = null;
        for (ConnectionPool pool : cluster.pools().values()) {
            try (Jedis node = new Jedis(pool.getResource())) {
                return slotOwnersFrom(node.clusterSlots());
            } catch (JedisException e) {
                last = e;
            }
        }
        throw last != null ? last : new JedisConnectionException("the cluster client knows no node");
    }

    private static String[] slotOwnersFrom(List<Object> ranges) {
        String[] owners = new String[Protocol.CLUSTER_HASHSLOTS];
        for (Object rangeReply : ranges) {
            List<?> range = (List<?>) rangeReply;
            int from = ((Long) range.get(0)).intValue();
            int to = ((Long) range.get(1)).intValue();
            List<?> master = (List<?>) range.get(2);
            String address = SafeEncoder.encode((byte[]) master.get(0)) + ":" + master.get(1);
            for (int slot = from; slot <= to; slot++) {
                owners[slot] = address;
            }
        }
        return owners;
    }

    /** Called on a session's thread when its read loop ended, cleanly or not. */
    private void sessionEnded(NodeSession session, boolean failed) {
        List<String> orphaned;
        synchronized (monitor) {
            sessions.remove(session.address, session);
            orphaned = new ArrayList<>(session.channels);
            for (String name : orphaned) {
                placement.remove(name, session);
                if (notices.isWanted(name)) {
                    unplaced.add(name);
                }
            }
            session.channels.clear();
            if (failed) {
                // The owner may have changed (failover, resharding): read the slot map again, after a backoff.
                slotOwners = null;
                nextAttemptNanos = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(backoff.next());
            }
            placementDue = true;
            monitor.notifyAll();
        }
        if (failed && !notices.isClosed()) {
            notices.channelsLost(orphaned, "connection lost");
        }
    }

    /** The server confirmed the first channel of a session: writes may flow now. */
    private void sessionLive(NodeSession session) {
        synchronized (monitor) {
            session.live = true;
            backoff.reset();
            if (notices.isClosed() || session.channels.isEmpty()) {
                session.unsubscribeAll();
            }
            placementDue = true;
            monitor.notifyAll();
        }
        log.debug("Sharded release notice connection to {} established", session.address);
    }

    private void confirmed(NodeSession session, String name) {
        boolean ours;
        synchronized (monitor) {
            ours = placement.get(name) == session;
            if (!ours && !session.closing && !notices.isClosed()) {
                // Confirmed after its last listener left (or it moved to another session): drop it here.
                session.unsubscribe(name);
            }
        }
        if (ours) {
            notices.channelConfirmed(name);
        }
    }

    private void unsubscribed(NodeSession session, String name) {
        boolean droppedByServer;
        synchronized (monitor) {
            Integer pending = session.requestedUnsubscribes.get(name);
            if (session.closing || notices.isClosed()) {
                return;
            }
            if (pending != null) {
                if (pending == 1) {
                    session.requestedUnsubscribes.remove(name);
                } else {
                    session.requestedUnsubscribes.put(name, pending - 1);
                }
                if (placement.get(name) == session) {
                    // A stale SUNSUBSCRIBE overtaken by a new listener; its SSUBSCRIBE confirmation follows.
                    notices.channelUnsubscribed(name);
                }
                return;
            }
            // Not asked for: the server dropped the channel because its slot moved to another node.
            session.serverDroppedChannels = true;
            droppedByServer = placement.remove(name, session);
            session.channels.remove(name);
            if (session.channels.isEmpty()) {
                // The server count is zero too: Jedis leaves the read loop now, so nothing more may be written.
                session.closing = true;
            }
            if (droppedByServer) {
                unplaced.add(name);
                slotOwners = null;
                placementDue = true;
                monitor.notifyAll();
            }
        }
        if (droppedByServer) {
            log.debug("Node {} dropped sharded channel '{}' (slot moved); placing it again", session.address, name);
            notices.channelsLost(List.of(name), "slot moved");
        }
    }

    /** One subscriber connection to one node and the thread reading it. */
    private final class NodeSession extends JedisShardedPubSub {
        final String address;
        final ConnectionPool pool;
        /** Channels placed on this connection (subscribed, or subscribing). Guarded by the monitor. */
        final Set<String> channels = new LinkedHashSet<>();
        /** SUNSUBSCRIBE replies still expected per channel, to tell them from the server's own drops. */
        final Map<String, Integer> requestedUnsubscribes = new HashMap<>();
        boolean live;
        boolean closing;
        boolean serverDroppedChannels;
        Thread thread;
        private String[] initialChannels;

        NodeSession(String address, ConnectionPool pool) {
            this.address = address;
            this.pool = pool;
        }

        void start() {
            initialChannels = channels.toArray(new String[0]);
            thread = NoticeThreads.start("dlock-redis-sharded-notices-" + address, this::run);
        }

        private void run() {
            Connection connection = null;
            boolean failed = true;
            try {
                connection = pool.getResource();
                // Blocks until the subscription count reaches zero or the connection fails.
                proceed(connection, initialChannels);
                failed = false;
            } catch (Throwable e) {
                if (!notices.isClosed()) {
                    log.warn("Sharded release notice connection to {} failed: {}", address, e.toString());
                }
            } finally {
                if (connection != null) {
                    boolean unreadRepliesPossible;
                    synchronized (monitor) {
                        unreadRepliesPossible = failed || serverDroppedChannels || !closing;
                    }
                    if (unreadRepliesPossible) {
                        connection.setBroken();
                    }
                    closeQuietly(connection);
                }
                sessionEnded(this, failed);
            }
        }

        /**
         * Returns the connection to its pool without throwing: on Jedis 8 (commons-pool2 2.13) returning a broken
         * connection opens its replacement at once, which fails while the node is down, and the session must still end.
         */
        private void closeQuietly(Connection connection) {
            try {
                connection.close();
            } catch (RuntimeException e) {
                log.debug("Returning the sharded release notice connection to {} failed: {}", address, e.toString());
            }
        }

        /** Subscribes more channels, one SSUBSCRIBE per slot; callers hold the monitor and checked {@code live && !closing}. */
        void subscribe(List<String> names) {
            Map<Integer, List<String>> bySlot = new LinkedHashMap<>();
            for (String name : names) {
                bySlot.computeIfAbsent(JedisClusterCRC16.getSlot(name), slot -> new ArrayList<>()).add(name);
            }
            for (List<String> sameSlot : bySlot.values()) {
                write(() -> ssubscribe(sameSlot.toArray(new String[0])));
            }
        }

        /** Unsubscribes one channel, or everything when it was the last; callers hold the monitor. */
        void unsubscribe(String name) {
            if (!live || closing) {
                // Not written yet: the first confirmation (or the session's end) takes care of it.
                return;
            }
            if (channels.isEmpty()) {
                unsubscribeAll();
                return;
            }
            requestedUnsubscribes.merge(name, 1, Integer::sum);
            write(() -> sunsubscribe(name));
        }

        /** Ends the session with SUNSUBSCRIBE of every channel; nothing is written afterwards. Callers hold the monitor. */
        void unsubscribeAll() {
            if (!live || closing) {
                return;
            }
            closing = true;
            write(this::sunsubscribe);
        }

        private void write(Runnable command) {
            try {
                command.run();
            } catch (RuntimeException e) {
                // The reading thread sees the same failure and ends the session; its channels are placed again.
                log.debug("Write to the sharded release notice connection to {} failed: {}", address, e.toString());
            }
        }

        @Override
        public void onSSubscribe(String channel, int subscribedChannels) {
            try {
                if (!live) {
                    sessionLive(this);
                }
                confirmed(this, channel);
            } catch (Throwable e) {
                log.warn("Handling SSUBSCRIBE confirmation of '{}' failed", channel, e);
            }
        }

        @Override
        public void onSUnsubscribe(String channel, int subscribedChannels) {
            try {
                if (channel != null) {
                    unsubscribed(this, channel);
                }
            } catch (Throwable e) {
                log.warn("Handling SUNSUBSCRIBE of '{}' failed", channel, e);
            }
        }

        @Override
        public void onSMessage(String channel, String message) {
            try {
                notices.messageReceived(channel);
            } catch (Throwable e) {
                log.warn("Handling a sharded message on '{}' failed", channel, e);
            }
        }
    }
}
