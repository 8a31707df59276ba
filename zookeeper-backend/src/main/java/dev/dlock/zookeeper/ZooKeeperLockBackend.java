package dev.dlock.zookeeper;

import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.state.ConnectionState;
import org.apache.curator.framework.state.ConnectionStateListener;
import org.apache.curator.utils.ZKPaths;
import org.apache.zookeeper.CreateMode;
import org.apache.zookeeper.KeeperException;
import org.apache.zookeeper.WatchedEvent;
import org.apache.zookeeper.Watcher;
import org.apache.zookeeper.common.PathUtils;
import org.apache.zookeeper.data.Stat;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URLEncoder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * A {@link LockBackend} on ZooKeeper, over a Curator client: each key is a queue of ephemeral sequential nodes under
 * the key's node, and the owner of the lowest node holds the key, first come, first served across JVMs. A
 * watchdog-managed lease lives as long as the session ({@link SessionLeases#UNTIL_RELEASED}); a suspended connection
 * counts as lost and is reported to the {@link SessionLeases.LeaseLossListener}s at once. Fencing tokens are zxids.
 * Thread-safe; the client belongs to the caller ({@link #close()} leaves it open).
 * Details (the recipe, {@link #withdraw}, fixed leases, tokens): docs/zookeeper.md (setup example there too).
 */
public final class ZooKeeperLockBackend implements LockBackend, SessionLeases, LeaseExtension {

    private static final Logger log = LoggerFactory.getLogger(ZooKeeperLockBackend.class);

    /** Where key nodes live when no base path is configured. */
    public static final String DEFAULT_BASE_PATH = "/dlock/locks";
    /** Said to the holder when its own lock node disappears. */
    static final String NODE_GONE = "the lock node expired or was deleted in ZooKeeper";
    static final String SUSPENDED = "the ZooKeeper connection was suspended: the session may expire unseen, and the lock node with it";
    static final String SESSION_LOST = "the ZooKeeper session was lost, and the lock node with it";

    private static final String NODE_PREFIX = "lock-";
    private static final int SEQUENCE_DIGITS = 10;
    private static final long CLEANUP_RETRY_MILLIS = 1000;
    private static final int CLEANUP_ATTEMPTS = 120;
    private static final int PARENT_REAPED_ATTEMPTS = 5;

    private final CuratorFramework client;
    private final String basePath;
    private final ZooKeeperReleaseNotices notices;
    /** Per owner: its node and where it stands. */
    private final ConcurrentHashMap<String, Entry> entries = new ConcurrentHashMap<>();
    /** Held nodes by path, for the watch on each holder's own node. */
    private final ConcurrentHashMap<String, Entry> heldNodes = new ConcurrentHashMap<>();
    private final List<LeaseLossListener> lossListeners = new CopyOnWriteArrayList<>();
    private final ScheduledExecutorService scheduler;
    private final ConnectionStateListener connectionListener = (c, state) -> connectionChanged(state);
    private final Watcher predecessorWatcher = this::predecessorChanged;
    private final Watcher holderWatcher = this::holderNodeChanged;

    private enum State { QUEUED, HELD, DELETING, LOST, EXPIRED }

    /** One owner's node in one key's queue. Guarded by itself. */
    private static final class Entry {
        /** The owner token the node is held for; an extension gives it a new one. */
        volatile String owner;
        final String key;
        final String keyPath;
        /** Part of the node's name, so that a node whose create reply was lost can still be found. */
        final String tag = UUID.randomUUID().toString();
        String nodePath;
        long czxid;
        State state = State.QUEUED;
        ScheduledFuture<?> expiry;
        /** Kept for a retired owner until lockAtLeastFor ends ({@link #shorten}): no holder will release it. */
        boolean retired;
        /**
         * Held across this owner's ZooKeeper calls, so that its acquire, renewal, release and expiry never interleave.
         * Not a monitor: a virtual thread blocked in a ZooKeeper call under a monitor would pin its carrier (before JDK 24).
         */
        final ReentrantLock lock = new ReentrantLock();

        Entry(String owner, String key, String keyPath) {
            this.owner = owner;
            this.key = key;
            this.keyPath = keyPath;
        }
    }

    private ZooKeeperLockBackend(Builder builder) {
        this.client = builder.client;
        this.basePath = builder.basePath;
        this.notices = new ZooKeeperReleaseNotices(client, this::keyPath);
        this.scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "dlock-zookeeper-" + basePath);
            thread.setDaemon(true);
            return thread;
        });
        client.getConnectionStateListenable().addListener(connectionListener);
    }

    /** Starts configuring a backend over {@code client}, which must be started by its owner. */
    public static Builder builder(CuratorFramework client) {
        return new Builder(client);
    }

    // ---------------------------------------------------------------- acquire

    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        Objects.requireNonNull(owner, "owner");
        if (leaseMillis < 1) {
            throw new IllegalArgumentException("leaseMillis must be at least 1, was " + leaseMillis);
        }
        Entry entry = entries.computeIfAbsent(owner, o -> new Entry(o, key, keyPath(key)));
        if (!entry.key.equals(key)) {
            throw new IllegalArgumentException("owner '" + owner + "' is already used for key '" + entry.key + "', not '" + key + "'");
        }
        entry.lock.lock();
        try {
            try {
                return attempt(entry, owner, leaseMillis);
            } catch (InterruptedException e) {
                // Not acquired: the engine sees the interrupt and withdraws the owner, which deletes the node.
                Thread.currentThread().interrupt();
                return new AcquireResult.Held(-1);
            } catch (Exception e) {
                throw failure("acquire key '" + key + "'", e);
            }
        } finally {
            entry.lock.unlock();
        }
    }

    private AcquireResult attempt(Entry entry, String owner, long leaseMillis) throws Exception {
        if (entry.state == State.HELD) {
            // The same owner again (a retried call): still its key, with a fresh, larger token.
            Stat stat = client.setData().forPath(entry.nodePath, owner.getBytes(StandardCharsets.UTF_8));
            scheduleExpiry(entry, owner, leaseMillis);
            return new AcquireResult.Acquired(stat.getMzxid());
        }
        if (entry.state != State.QUEUED) {
            // Lost or expired before this attempt: start over at the end of the queue.
            forget(entry);
            entry.state = State.QUEUED;
        }
        for (int round = 0; ; round++) {
            if (entry.nodePath == null) {
                enqueue(entry, owner);
            }
            Stat keyStat = new Stat();
            List<String> queue;
            try {
                queue = client.getChildren().storingStatIn(keyStat).forPath(entry.keyPath);
            } catch (KeeperException.NoNodeException e) {
                queue = List.of();
            }
            queue = new ArrayList<>(queue);
            queue.sort(Comparator.comparing(ZooKeeperLockBackend::sequenceOf));
            int mine = indexOfTag(queue, entry.tag);
            if (mine < 0) {
                // Our node is gone (deleted behind our back, or with an expired session): queue again.
                entry.nodePath = null;
                if (round > 2) {
                    throw new LockBackendException("the lock node for key '" + entry.key + "' keeps disappearing", null);
                }
                continue;
            }
            deleteDuplicates(queue, mine, entry);
            String myName = ZKPaths.getNodeFromPath(entry.nodePath);
            if (!queue.get(mine).equals(myName)) {
                entry.nodePath = ZKPaths.makePath(entry.keyPath, queue.get(mine));
            }
            if (mine == 0) {
                return grant(entry, owner, leaseMillis, keyStat);
            }
            String predecessor = ZKPaths.makePath(entry.keyPath, queue.get(mine - 1));
            if (client.checkExists().usingWatcher(predecessorWatcher).forPath(predecessor) != null) {
                return new AcquireResult.Held(-1);
            }
            // The predecessor went between the listing and the watch: look again.
        }
    }

    private void enqueue(Entry entry, String owner) throws Exception {
        Stat stat = new Stat();
        try {
            for (int attempt = 1; ; attempt++) {
                try {
                    entry.nodePath = client.create().storingStatIn(stat).creatingParentContainersIfNeeded()
                            .withMode(CreateMode.EPHEMERAL_SEQUENTIAL)
                            .forPath(ZKPaths.makePath(entry.keyPath, NODE_PREFIX + entry.tag + "-"), owner.getBytes(StandardCharsets.UTF_8));
                    break;
                } catch (KeeperException.NoNodeException e) {
                    // ZooKeeper reaped an empty parent (a container) between its creation and ours: create it again.
                    if (attempt >= PARENT_REAPED_ATTEMPTS) {
                        throw e;
                    }
                }
            }
            entry.czxid = stat.getCzxid();
        } catch (Exception e) {
            // The create may have happened without its reply reaching us: find the node by its tag and delete it.
            deleteByTagLater(entry.keyPath, entry.tag, 0);
            entries.remove(owner, entry);
            throw e;
        }
    }

    private AcquireResult grant(Entry entry, String owner, long leaseMillis, Stat keyStat) throws Exception {
        long token;
        if (keyStat.getPzxid() == entry.czxid) {
            // No node of this key was created or deleted after ours: every earlier token is older than our creation.
            token = entry.czxid;
        } else {
            // A predecessor may have taken a token after our node was queued: a write now is newer than all of them.
            token = client.setData().forPath(entry.nodePath, owner.getBytes(StandardCharsets.UTF_8)).getMzxid();
        }
        entry.state = State.HELD;
        heldNodes.put(entry.nodePath, entry);
        if (client.checkExists().usingWatcher(holderWatcher).forPath(entry.nodePath) == null) {
            heldNodes.remove(entry.nodePath, entry);
            entry.state = State.LOST;
            throw new LockBackendException("the lock node for key '" + entry.key + "' vanished while it was granted", null);
        }
        scheduleExpiry(entry, owner, leaseMillis);
        return new AcquireResult.Acquired(token);
    }

    private void scheduleExpiry(Entry entry, String owner, long leaseMillis) {
        if (entry.expiry != null) {
            entry.expiry.cancel(false);
            entry.expiry = null;
        }
        if (leaseMillis != UNTIL_RELEASED) {
            entry.expiry = scheduler.schedule(() -> expire(entry, owner), leaseMillis, TimeUnit.MILLISECONDS);
        }
    }

    /** A fixed lease ran out: the owner's node goes, so the next in the queue gets the key. */
    private void expire(Entry entry, String owner) {
        entry.lock.lock();
        try {
            if (entry.state != State.HELD || entries.get(owner) != entry) {
                return;
            }
            entry.state = State.EXPIRED;
            heldNodes.remove(entry.nodePath, entry);
            deleteInBackground(entry.nodePath);
            if (entry.retired) {
                entries.remove(owner, entry);
            }
        } finally {
            entry.lock.unlock();
        }
    }

    /**
     * A new term of a fixed lease (a watchdog-managed one lives with the session, and the engine sends it nothing): the
     * lease is held for {@code nextOwner} from now on, its node's data names it (for the holders an operator reads), and
     * its end, which this backend schedules, moves to {@code leaseMillis} from now. A lease that ran out or was lost is
     * not revived; an owner already extended to {@code nextOwner} answers {@code RENEWED} again.
     */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        return newTerm(kind, key, owner, nextOwner, leaseMillis, false);
    }

    /**
     * A release before lockAtLeastFor ran out: the key is kept for {@code retiredOwner} until {@code keepMillis} from
     * now, a new term as {@link #extend} gives, whose end this backend times (in this JVM: if it dies first, the node
     * goes with its session); then the node is deleted, as a fixed lease's is, or when this backend is closed. No
     * command for {@code owner} finds the key any more.
     */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        return newTerm(kind, key, owner, retiredOwner, Math.max(1, keepMillis), true);
    }

    /** This backend times a shortened lease ({@link #shorten}), so lockAtLeastFor is kept. */
    @Override
    public boolean endsShortenedLeases() {
        return true;
    }

    private RenewalResult newTerm(LockKind kind, String key, String owner, String nextOwner, long leaseMillis, boolean retire) {
        BackendCapabilities.requireExclusive(this, kind);
        Objects.requireNonNull(owner, "owner");
        Objects.requireNonNull(nextOwner, "nextOwner");
        if (leaseMillis < 1) {
            throw new IllegalArgumentException("leaseMillis must be at least 1, was " + leaseMillis);
        }
        Entry repeat = entries.get(nextOwner);
        if (repeat != null && repeat.key.equals(key)) {
            repeat.lock.lock();
            try {
                return repeat.state == State.HELD ? RenewalResult.RENEWED : RenewalResult.EXPIRED;
            } finally {
                repeat.lock.unlock();
            }
        }
        Entry entry = entries.get(owner);
        if (entry == null || !entry.key.equals(key)) {
            return RenewalResult.EXPIRED;
        }
        entry.lock.lock();
        try {
            if (entry.state != State.HELD || entries.get(owner) != entry) {
                return RenewalResult.EXPIRED;
            }
            try {
                client.setData().forPath(entry.nodePath, nextOwner.getBytes(StandardCharsets.UTF_8));
            } catch (KeeperException.NoNodeException e) {
                // Deleted behind our back (a forced release): the watch on it reports the loss.
                return RenewalResult.EXPIRED;
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw failure("extend key '" + key + "'", e);
            } catch (Exception e) {
                throw failure("extend key '" + key + "'", e);
            }
            entries.remove(owner, entry);
            entry.owner = nextOwner;
            entry.retired = retire;
            entries.put(nextOwner, entry);
            scheduleExpiry(entry, nextOwner, leaseMillis);
            return RenewalResult.RENEWED;
        } finally {
            entry.lock.unlock();
        }
    }

    // ---------------------------------------------------------------- release

    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        BackendCapabilities.requireExclusive(this, kind);
        Entry entry = entries.get(owner);
        if (entry == null || !entry.key.equals(key)) {
            // Nothing was taken through this backend for this owner, or its release was already confirmed.
            return ReleaseResult.NOT_OWNER;
        }
        entry.lock.lock();
        try {
            switch (entry.state) {
                case QUEUED, LOST, EXPIRED -> {
                    // Not held (any more): make sure nothing is left queued or blocking, and say so.
                    forget(entry);
                    entries.remove(owner, entry);
                    return ReleaseResult.NOT_OWNER;
                }
                default -> {
                    boolean retry = entry.state == State.DELETING;
                    entry.state = State.DELETING;
                    heldNodes.remove(entry.nodePath, entry);
                    cancelExpiry(entry);
                    try {
                        client.delete().forPath(entry.nodePath);
                    } catch (KeeperException.NoNodeException e) {
                        entries.remove(owner, entry);
                        // Gone before this call: our own earlier attempt (its reply lost), or deleted behind our back.
                        return retry ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw failure("release key '" + key + "'", e);
                    } catch (Exception e) {
                        throw failure("release key '" + key + "'", e);
                    }
                    entries.remove(owner, entry);
                    notices.changed(entry.keyPath);
                    return ReleaseResult.RELEASED;
                }
            }
        } finally {
            entry.lock.unlock();
        }
    }

    /** Deletes the owner's queued node at once (in the background when the connection is down); never throws. */
    @Override
    public void withdraw(LockKind kind, String key, String owner) {
        Entry entry = entries.get(owner);
        if (entry == null || !entry.key.equals(key)) {
            return;
        }
        entry.lock.lock();
        try {
            if (entry.state != State.DELETING) {
                forget(entry);
                entries.remove(owner, entry);
            }
        } finally {
            entry.lock.unlock();
        }
    }

    /** Drops the entry's node: deleted in the background, found by its tag when its path is not known. */
    private void forget(Entry entry) {
        cancelExpiry(entry);
        if (entry.nodePath != null) {
            heldNodes.remove(entry.nodePath, entry);
            deleteInBackground(entry.nodePath);
            entry.nodePath = null;
        } else {
            deleteByTagLater(entry.keyPath, entry.tag, 0);
        }
    }

    private static void cancelExpiry(Entry entry) {
        if (entry.expiry != null) {
            entry.expiry.cancel(false);
            entry.expiry = null;
        }
    }

    private void deleteInBackground(String path) {
        try {
            // Guaranteed: Curator repeats it until it succeeds, also across reconnects.
            client.delete().guaranteed().inBackground().forPath(path);
        } catch (Exception e) {
            log.warn("dlock could not delete lock node {}; it goes with the session", path, e);
        }
    }

    private void deleteByTagLater(String keyPath, String tag, int attempt) {
        if (attempt >= CLEANUP_ATTEMPTS || scheduler.isShutdown()) {
            log.warn("dlock gave up looking for lock node {} under {}; it goes with the session", tag, keyPath);
            return;
        }
        try {
            scheduler.schedule(() -> {
                try {
                    for (String child : client.getChildren().forPath(keyPath)) {
                        if (child.contains(tag)) {
                            client.delete().guaranteed().forPath(ZKPaths.makePath(keyPath, child));
                        }
                    }
                } catch (KeeperException.NoNodeException e) {
                    // The key node is gone, and so is every node under it.
                } catch (Exception e) {
                    deleteByTagLater(keyPath, tag, attempt + 1);
                }
            }, attempt == 0 ? 0 : CLEANUP_RETRY_MILLIS, TimeUnit.MILLISECONDS);
        } catch (RejectedExecutionException e) {
            log.debug("dlock backend closed; lock node {} under {} goes with the session", tag, keyPath);
        }
    }

    /** Extra nodes with our tag (a create repeated after a lost reply) are deleted; the first one is ours. */
    private void deleteDuplicates(List<String> queue, int mine, Entry entry) {
        for (int i = mine + 1; i < queue.size(); i++) {
            if (queue.get(i).contains(entry.tag)) {
                deleteInBackground(ZKPaths.makePath(entry.keyPath, queue.get(i)));
            }
        }
    }

    // ---------------------------------------------------------------- renew, notices, losses

    /** Never called by the engine (leases are kept by the session); answers from what this backend holds. */
    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        List<RenewalResult> results = new ArrayList<>(batch.size());
        for (LeaseRenewal renewal : batch) {
            Entry entry = entries.get(renewal.owner());
            boolean held = entry != null && entry.key.equals(renewal.key()) && entry.state == State.HELD;
            results.add(held ? RenewalResult.RENEWED : RenewalResult.EXPIRED);
        }
        return results;
    }

    /**
     * Exclusive locks whose fencing tokens are zxids; release notices from watches on the key's queue; leases kept by
     * the session, lost ones reported by this backend; who holds a key (the owner of its lowest queue node; no expiry)
     * and an operator's forced release (deletes that node); extensions of a fixed lease, whose end this backend keeps.
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withReleaseNotices(notices).withSessionLeases(this)
                .withHolderInspection(new ZooKeeperHolderInspection(client, this::keyPath)).withLeaseExtension(this);
    }

    @Override
    public void addLeaseLossListener(LeaseLossListener listener) {
        lossListeners.add(Objects.requireNonNull(listener, "listener"));
    }

    private void predecessorChanged(WatchedEvent event) {
        if (event.getType() == Watcher.Event.EventType.NodeDeleted && event.getPath() != null) {
            notices.changed(ZKPaths.getPathAndNode(event.getPath()).getPath());
        }
    }

    private void holderNodeChanged(WatchedEvent event) {
        if (event.getType() != Watcher.Event.EventType.NodeDeleted || event.getPath() == null) {
            return;
        }
        Entry entry = heldNodes.remove(event.getPath());
        if (entry != null) {
            lost(entry, NODE_GONE);
        }
        notices.changed(ZKPaths.getPathAndNode(event.getPath()).getPath());
    }

    private void connectionChanged(ConnectionState state) {
        if (state == ConnectionState.SUSPENDED || state == ConnectionState.LOST) {
            String reason = state == ConnectionState.LOST ? SESSION_LOST : SUSPENDED;
            log.warn("dlock ZooKeeper connection {}: reporting {} held leases as lost", state, heldNodes.size());
            for (Entry entry : List.copyOf(heldNodes.values())) {
                heldNodes.remove(entry.nodePath, entry);
                lost(entry, reason);
            }
        }
        // Watch events may have been missed while disconnected: every waiter looks again.
        notices.changedAll();
    }

    private void lost(Entry entry, String reason) {
        String owner;
        entry.lock.lock();
        try {
            if (entry.state != State.HELD) {
                return;
            }
            // The node (if it still exists after a reconnect) stays until the holder releases: never two holders.
            entry.state = State.LOST;
            cancelExpiry(entry);
            owner = entry.owner;
        } finally {
            entry.lock.unlock();
        }
        for (LeaseLossListener listener : lossListeners) {
            try {
                listener.leaseLost(entry.key, owner, reason);
            } catch (RuntimeException e) {
                log.warn("dlock lease loss listener failed for key '{}'; ignored", entry.key, e);
            }
        }
    }

    /** Reads the root's existence, one round trip to the server. */
    @Override
    public long ping() {
        long start = System.nanoTime();
        try {
            client.checkExists().forPath("/");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw failure("ping", e);
        } catch (Exception e) {
            throw failure("ping", e);
        }
        return Math.max(1, System.nanoTime() - start);
    }

    /** Stops this backend's thread and connection listener; the client and its session stay with their owner. */
    @Override
    public void close() {
        client.getConnectionStateListenable().removeListener(connectionListener);
        scheduler.shutdownNow();
        // Keys kept for lockAtLeastFor would otherwise stay with the session, which the client's owner may keep open.
        for (Entry entry : entries.values()) {
            entry.lock.lock();
            try {
                if (entry.retired && entry.state == State.HELD) {
                    entry.state = State.EXPIRED;
                    heldNodes.remove(entry.nodePath, entry);
                    deleteInBackground(entry.nodePath);
                    entries.remove(entry.owner, entry);
                }
            } finally {
                entry.lock.unlock();
            }
        }
    }

    // ---------------------------------------------------------------- layout

    /** The key's node: the key URL-encoded (no '/', no control or unpaired characters), behind a prefix so it is never "." or "..". */
    String keyPath(String key) {
        return keyPath(basePath, key);
    }

    /** The node of {@code key} under {@code basePath}. */
    static String keyPath(String basePath, String key) {
        return ZKPaths.makePath(basePath, "k-" + URLEncoder.encode(key, StandardCharsets.UTF_8));
    }

    /** A queue node's sequence number, by which the queue is ordered. */
    static String sequenceOf(String child) {
        return child.length() >= SEQUENCE_DIGITS ? child.substring(child.length() - SEQUENCE_DIGITS) : child;
    }

    private static int indexOfTag(List<String> queue, String tag) {
        for (int i = 0; i < queue.size(); i++) {
            if (queue.get(i).contains(tag)) {
                return i;
            }
        }
        return -1;
    }

    private static LockBackendException failure(String what, Exception e) {
        return LockBackendException.storeFailure("dlock could not " + what + " in ZooKeeper", e);
    }

    /** Configures a {@link ZooKeeperLockBackend}. */
    public static final class Builder {
        private final CuratorFramework client;
        private String basePath = DEFAULT_BASE_PATH;

        private Builder(CuratorFramework client) {
            this.client = Objects.requireNonNull(client, "client");
        }

        /** The node under which each key gets its own node (default {@value #DEFAULT_BASE_PATH}). */
        public Builder basePath(String basePath) {
            Objects.requireNonNull(basePath, "basePath");
            try {
                PathUtils.validatePath(basePath);
            } catch (IllegalArgumentException e) {
                throw new IllegalArgumentException("basePath '" + basePath + "' is not a valid ZooKeeper path: " + e.getMessage(), e);
            }
            if (basePath.equals("/")) {
                throw new IllegalArgumentException("basePath must not be the root: lock nodes need a node of their own");
            }
            this.basePath = basePath;
            return this;
        }

        /** Builds the backend and starts listening to the client's connection state. */
        public ZooKeeperLockBackend build() {
            return new ZooKeeperLockBackend(this);
        }
    }
}
