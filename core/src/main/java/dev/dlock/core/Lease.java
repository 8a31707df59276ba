package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.core.spi.TokensOnRequest;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.VarHandle;
import java.time.Duration;
import java.util.OptionalLong;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The JVM-side record of one acquisition of a key: owner token, fencing token, re-entry count,
 * state and lease bookkeeping. Shared by every handle of the acquisition.
 *
 * <p>A store may take the key without issuing its fencing token ({@link AcquireResult.Acquired#TOKEN_ON_REQUEST}):
 * the lease then asks the store the first time its holder reads the token, and keeps it. It asks only while held
 * (the store refuses it too once the key passed on, since every local holder has its own store owner).
 * {@link #tokenLock} keeps an issuance, an extension and the end of the lease apart.
 *
 * <p>A fixed lease may be extended by its holder ({@link LeaseExtender}): each extension is a new term with an owner
 * token of its own in the store, so the lease's {@link #owner}, {@link #leaseMillis} and {@link #keepUntilNanos} change
 * with it; an extension whose outcome stayed unknown is kept as {@link #pending} until settled.
 */
final class Lease {

    final LockManager manager;
    final KeyGate gate;
    final String lockName;
    final String key;
    final LockKind kind;
    /** The owner token the store holds the key for: the acquisition's, then each extension's new term's. */
    volatile String owner;
    /** The lease of the current term: the acquisition's, or the last extension's (fixed leases only). */
    volatile long leaseMillis;
    final boolean watched;
    /** True when the store keeps the lease alive by its session: it has no expiry of its own, only a reported loss. */
    final boolean keptBySession;
    final StoreNode node;
    /** True when the lease keeps this JVM's turn on the key until released (exclusive kinds); shared leases give it back at once. */
    final boolean ownsTurn;
    final long acquiredAtNanos;
    /**
     * Until when a release only shortens the lease instead of freeing the key ({@code lockAtLeastFor}); 0 for never. An
     * extension may set it anew (ShedLock's extend counts {@code lockAtLeastFor} from the extension).
     */
    volatile long keepUntilNanos;
    /**
     * The term an extension is sending, or whose outcome stayed unknown (null otherwise): the store may hold the key
     * for its owner already, so a release frees that owner too and the next extension or token issuance settles it
     * first. Written under {@link #tokenLock}.
     */
    volatile Term pending;
    /** The acquisition that took the lease, as the listeners see it: its release and loss are reported with it. */
    final AcquisitionContext events;
    /** What the holders armed to stop their work when the lease is lost. */
    final LeaseStops stops = new LeaseStops(this);

    /**
     * Conservative local estimate of when the store lets the lease run out: send time of the last
     * confirmed write + lease. Before it, the store cannot have let the key go; after it, it may have.
     */
    volatile long expiresAtNanos;
    volatile Thread ownerThread;
    volatile String lostReason;
    /** Whether the listeners were told of the loss, or are being told; guarded by this. */
    private boolean lossReported;
    volatile long renewals;
    /** The watchdog slot the lease waits in; written under that slot's monitor. */
    volatile RenewalSlots.Slot slot;
    /** How many times in a row the key passed to this lease from a local holder while another owner waited for it. */
    int handOffStreak;
    /** True from the moment the watchdog hands the lease to a renewal call until the answer is applied; guarded by this. */
    boolean renewing;

    /**
     * True while this lease still has this JVM's turn on the key ({@link #ownsTurn}): whoever gives it back first —
     * the release, or the end of the lease (lost, or run out while others wait) — does so, once.
     */
    @SuppressWarnings("unused") // through TURN_HELD
    private volatile boolean turnHeld;
    private static final VarHandle TURN_HELD;

    static {
        try {
            TURN_HELD = MethodHandles.lookup().findVarHandle(Lease.class, "turnHeld", boolean.class);
        } catch (ReflectiveOperationException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private volatile LockState state = LockState.HELD;
    private int holds = 1;
    /** The fencing token; {@link AcquireResult.Acquired#TOKEN_ON_REQUEST} until issued. Written under {@link #tokenLock}. */
    private volatile long fencingToken;
    /**
     * Held across a token issuance or an extension (store calls) and across the last hold's drop, so that a release or
     * hand-off waits for an issuance or extension under way and none starts after it. Not a monitor: holders may be
     * virtual threads.
     */
    final ReentrantLock tokenLock = new ReentrantLock();
    /**
     * The lease's hash, drawn once: the watchdog's slot hashes the lease while the acquisition holds its monitor, and
     * an identity hash taken then inflates the monitor (stack locking, JDK 17's default) on every hold.
     */
    private final int hash = ThreadLocalRandom.current().nextInt();

    Lease(LockManager manager, KeyGate gate, String lockName, String key, LockKind kind, String owner, long fencingToken,
          long leaseMillis, boolean watched, boolean keptBySession, StoreNode node, boolean ownsTurn, long sentAtNanos,
          Duration lockAtLeastFor, AcquisitionContext events) {
        this.manager = manager;
        this.gate = gate;
        this.lockName = lockName;
        this.key = key;
        this.kind = kind;
        this.owner = owner;
        this.fencingToken = fencingToken;
        this.leaseMillis = leaseMillis;
        this.watched = watched;
        this.keptBySession = keptBySession;
        this.node = node;
        this.ownsTurn = ownsTurn;
        this.acquiredAtNanos = System.nanoTime();
        this.keepUntilNanos = lockAtLeastFor == null ? 0 : acquiredAtNanos + lockAtLeastFor.toNanos();
        this.events = events;
        this.expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        this.ownerThread = Thread.currentThread();
        this.turnHeld = ownsTurn;
    }

    /** Takes this JVM's turn on the key back from the lease, once; false when it has none or gave it back already. */
    boolean giveBackTurn() {
        return TURN_HELD.compareAndSet(this, true, false);
    }

    /** Whether the lease still has this JVM's turn on the key. */
    boolean hasTurn() {
        return turnHeld;
    }

    /**
     * Whether the lease ended for everyone but its holder: lost, or held past the time the store may have let it go.
     * Its turn on the key then goes to the JVM's next waiter, who asks the store like any other owner.
     */
    boolean lapsed(long nowNanos) {
        LockState current = state;
        return current == LockState.LOST || current == LockState.HELD && !surelyLive(nowNanos);
    }

    /** Why a watched lease whose expiry passed with no renewal confirmed is lost. */
    String unconfirmedRenewalReason() {
        return "no renewal was confirmed before the lease of " + leaseMillis + " ms ran out: the store did not answer in time";
    }

    long renewalIntervalNanos() {
        return TimeUnit.MILLISECONDS.toNanos(leaseMillis) / 3;
    }

    /** True until the local expiry estimate: the store cannot have let the key go yet. */
    boolean surelyLive(long nowNanos) {
        return keptBySession || nowNanos - expiresAtNanos < 0;
    }

    boolean isHeld() {
        return state == LockState.HELD && surelyLive(System.nanoTime());
    }

    /** The state as the holder sees it: a held lease whose expiry passed unconfirmed may be gone, so it reads LOST. */
    LockState state() {
        LockState current = state;
        return current == LockState.HELD && !surelyLive(System.nanoTime()) ? LockState.LOST : current;
    }

    /** The recorded state, without the expiry view. */
    LockState recordedState() {
        return state;
    }

    /**
     * Counts one more re-entrant hold; false when the lease was released meanwhile. A lost lease, or
     * one whose expiry passed without a confirmed renewal, cannot be re-entered without a store call.
     */
    synchronized boolean reenter() {
        if (state == LockState.RELEASED) {
            return false;
        }
        if (state == LockState.LOST) {
            throw new LockLostException(lockName, key, lostReason);
        }
        if (!surelyLive(System.nanoTime())) {
            throw new LockLostException(lockName, key, watched
                    ? "re-entry refused: no renewal of the " + leaseMillis + " ms lease was confirmed in time, so the store may have let the key go"
                    : "re-entry refused: the fixed lease of " + leaseMillis + " ms ran out");
        }
        holds++;
        return true;
    }

    /**
     * Drops one hold. When it was the last, marks the lease released in the same step — so that no
     * re-entry can slip in between — and returns the state it had (HELD or LOST); otherwise null.
     */
    LockState dropHold() {
        // After an issuance under way, never during it: its token must be issued while the lease is still held.
        tokenLock.lock();
        try {
            synchronized (this) {
                if (--holds > 0) {
                    return null;
                }
                LockState before = state;
                state = LockState.RELEASED;
                return before;
            }
        } finally {
            tokenLock.unlock();
        }
    }

    /** The fencing token as issued so far, never asking the store: {@link AcquireResult.Acquired#TOKEN_ON_REQUEST} until then. */
    long issuedToken() {
        return fencingToken;
    }

    /**
     * The fencing token, asking the store for it the first time when the acquisition did not issue it.
     *
     * @throws IllegalStateException when the lease ended (released, or passed to the next local holder) before the token was issued
     * @throws LockLostException when the lease was lost, or the store says it no longer holds the key (reported as a loss)
     * @throws LockBackendException when the store could not be asked; the lease is unchanged, and the next call asks again
     */
    long fencingToken() {
        long token = fencingToken;
        if (token != AcquireResult.Acquired.TOKEN_ON_REQUEST) {
            return token;
        }
        tokenLock.lock();
        try {
            token = fencingToken;
            if (token != AcquireResult.Acquired.TOKEN_ON_REQUEST) {
                return token;
            }
            LockState current = state;
            if (current == LockState.RELEASED) {
                throw new IllegalStateException(this + " was released before its fencing token was asked for; a token is "
                        + "issued only while the lock is held (read it inside the critical section)");
            }
            if (current == LockState.LOST) {
                throw new LockLostException(lockName, key, lostReason);
            }
            // The store may hold the key for an extension's owner already: settled first, so the issuance asks as that one.
            LeaseExtender.settle(this);
            TokensOnRequest issuer = manager.capabilities().tokensOnRequest().orElseThrow(() -> new UnsupportedOperationException(
                    manager.backend().getClass().getName() + " issues every fencing token with its acquisition"));
            OptionalLong issued = issuer.issueFencingToken(kind, key, owner);
            if (issued.isEmpty()) {
                manager.losses.leaseLost(this, "the store no longer held the key when its fencing token was asked for", false);
                throw new LockLostException(lockName, key, lostReason);
            }
            fencingToken = issued.getAsLong();
            return fencingToken;
        } finally {
            tokenLock.unlock();
        }
    }

    /**
     * Claims the telling of the lease's loss to the listeners: true once, to whoever asks first, the events thread or
     * the holder's release (which must tell it before {@code onReleased}, the acquisition's last event).
     */
    synchronized boolean claimLossReport() {
        if (lossReported) {
            return false;
        }
        lossReported = true;
        return true;
    }

    /** Marks a held lease lost; false when it was already released or lost. */
    synchronized boolean markLost(String reason) {
        if (state != LockState.HELD) {
            return false;
        }
        lostReason = reason;
        state = LockState.LOST;
        return true;
    }

    /** Records a renewal sent at {@code sentAtNanos} and confirmed; false when the lease is no longer held. */
    synchronized boolean renewed(long sentAtNanos) {
        if (state != LockState.HELD) {
            return false;
        }
        expiresAtNanos = sentAtNanos + TimeUnit.MILLISECONDS.toNanos(leaseMillis);
        renewals++;
        return true;
    }

    /**
     * One term of a fixed lease, as an extension sends it: the new owner token, the lease, when it was first sent, and
     * the {@code lockAtLeastFor} deadline it brings (0 for none).
     */
    record Term(String owner, long leaseMillis, long sentAtNanos, long keepUntilNanos) {
    }

    /** Whether {@code storeOwner} is this lease's owner in the store, or may be (an extension sent or not settled). */
    boolean ownedBy(String storeOwner) {
        Term next = pending;
        return storeOwner.equals(owner) || next != null && storeOwner.equals(next.owner());
    }

    /**
     * Records the store's confirmation of {@code term}: the lease is now that term's, counted from its first send; false
     * (nothing changed) when the lease is no longer held (lost meanwhile: the manager's shutdown, a forced release).
     */
    synchronized boolean newTerm(Term term) {
        if (state != LockState.HELD) {
            return false;
        }
        owner = term.owner();
        leaseMillis = term.leaseMillis();
        keepUntilNanos = term.keepUntilNanos();
        expiresAtNanos = term.sentAtNanos() + TimeUnit.MILLISECONDS.toNanos(term.leaseMillis());
        pending = null;
        return true;
    }

    /**
     * An extension to {@code term} whose outcome stayed unknown: the store holds the key either for the earlier term or
     * for this one, so the lease is counted until the earlier of the two ends.
     */
    synchronized void termUnsure(Term term) {
        long termEnd = term.sentAtNanos() + TimeUnit.MILLISECONDS.toNanos(term.leaseMillis());
        if (termEnd - expiresAtNanos < 0) {
            expiresAtNanos = termEnd;
        }
    }

    /** Records that the renewal in flight was answered or given up; see {@link #renewing}. */
    synchronized void renewalAnswered() {
        renewing = false;
    }

    @Override
    public String toString() {
        String of = kind == LockKind.EXCLUSIVE ? "" : " (" + kind + ")";
        return "lock '" + lockName + "'" + of + " on key '" + key + "'";
    }

    /** Fixed at construction; equality stays identity. */
    @Override
    public int hashCode() {
        return hash;
    }

    @Override
    public boolean equals(Object other) {
        return this == other;
    }
}
