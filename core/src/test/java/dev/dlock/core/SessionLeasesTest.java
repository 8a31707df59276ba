package dev.dlock.core;

import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import org.junit.jupiter.api.Test;

/**
 * A store that keeps leases alive by its session (as ZooKeeper does): the engine sends it no renewals,
 * a watchdog lease stays held however long the method runs, and a lost session reaches the holder
 * exactly as a lease lost on an expiring store does.
 */
class SessionLeasesTest extends EngineTestSupport {

    /**
     * The in-memory store behind a session: keys taken "until released" live until released or until the
     * session ends, when the store drops them (as ZooKeeper drops ephemeral nodes) and reports each holder.
     */
    private final class SessionStore implements LockBackend, SessionLeases {
        private static final long SESSION_HOLD_MILLIS = TimeUnit.HOURS.toMillis(1);
        final List<Long> leasesAsked = new CopyOnWriteArrayList<>();
        final List<LeaseRenewal> renewalsAsked = new CopyOnWriteArrayList<>();
        private final Map<String, AcquireResult.Acquired> sessionHeld = new ConcurrentHashMap<>();
        private final Map<String, String> owners = new ConcurrentHashMap<>();
        private final List<LeaseLossListener> listeners = new CopyOnWriteArrayList<>();

        @Override
        public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
            leasesAsked.add(leaseMillis);
            AcquireResult result = store.tryAcquire(kind, key, owner, leaseMillis == UNTIL_RELEASED ? SESSION_HOLD_MILLIS : leaseMillis);
            if (result instanceof AcquireResult.Acquired acquired) {
                sessionHeld.put(key, acquired);
                owners.put(key, owner);
            }
            return result;
        }

        @Override
        public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
            owners.remove(key, owner);
            return store.release(kind, key, owner, fencingToken);
        }

        @Override
        public List<RenewalResult> renew(List<LeaseRenewal> batch) {
            renewalsAsked.addAll(batch);
            return store.renew(batch);
        }

        @Override
        public BackendCapabilities capabilities() {
            return BackendCapabilities.DEFAULT.withSessionLeases(this);
        }

        @Override
        public void addLeaseLossListener(LeaseLossListener listener) {
            listeners.add(listener);
        }

        /** The session expires: the store frees every key it held, then the backend tells the engine. */
        void endSession() {
            owners.forEach((key, owner) -> {
                store.release(LockKind.EXCLUSIVE, key, owner, sessionHeld.get(key).fencingToken());
                listeners.forEach(l -> l.leaseLost(key, owner, "the store session expired"));
            });
            owners.clear();
        }

        void reportLoss(String key, String owner) {
            listeners.forEach(l -> l.leaseLost(key, owner, "reported"));
        }

        @Override
        public long ping() {
            return store.ping();
        }
    }

    private final SessionStore session = new SessionStore();

    @Test
    void aWatchdogLeaseIsKeptByTheSessionWithoutRenewalsLongPastItsLeaseTime() throws InterruptedException {
        LockManager locks = manager(session, b -> b.leaseTime(Duration.ofMillis(60)));
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            // Five leases' worth: an expiring store would have had 15 renewals and a lost lease without them.
            Thread.sleep(300);
            assertThat(session.renewalsAsked).as("renewals sent to a session-keeping store").isEmpty();
            assertThat(locks.admin().watchdogRenewCallCount()).isZero();
            assertThat(lock.isHeld()).as("held: the session lives").isTrue();
            assertThat(lock.state()).isEqualTo(LockState.HELD);
            assertThat(locks.admin().heldLocks()).singleElement().satisfies(held -> assertThat(held.leaseExpiresIn()).isNull());
            assertThat(manager().tryAcquire(key)).as("another owner while held").isEmpty();
            assertThat(locks.admin().watchedLeaseCount()).isEqualTo(1);
        }
        assertThat(session.leasesAsked).containsExactly(SessionLeases.UNTIL_RELEASED);
        assertThat(locks.admin().watchedLeaseCount()).isZero();
        assertThat(manager().tryAcquire(key)).as("free after release").isPresent();
    }

    /** A session store that cannot time a shortened lease would keep the key for the session: lockAtLeastFor is refused. */
    @Test
    void lockAtLeastForIsRefusedWhenTheStoreCannotTimeAShortenedLeaseAndNothingIsTaken() {
        LockManager locks = manager(session, b -> { });
        LockRequest request = LockRequest.builder(key).waitTime(Duration.ZERO).lockAtLeastFor(Duration.ofSeconds(1)).build();
        assertThatThrownBy(() -> locks.acquire(request)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("lockAtLeastFor").hasMessageContaining(key).hasMessageContaining("cannot time");
        assertThat(session.leasesAsked).as("acquisitions sent").isEmpty();
        assertThat(manager().tryAcquire(key)).as("the key is free").isPresent().get().satisfies(LockHandle::close);
    }

    @Test
    void aLostSessionReachesTheHolderAsALostLease() {
        List<String> lost = new CopyOnWriteArrayList<>();
        LockManager locks = manager(session, b -> b.listener(new LockListener() {
            @Override
            public void onLeaseLost(String lockName, String key, String reason) {
                lost.add(key + ": " + reason);
            }
        }));
        LockHandle lock = locks.acquire(key, Duration.ZERO);
        session.endSession();

        assertThat(lock.state()).isEqualTo(LockState.LOST);
        assertThat(lock.isHeld()).isFalse();
        // The listeners hear it from the manager's events thread, a moment after the handle turned LOST.
        await("the loss told to the listener", Duration.ofSeconds(10), () -> !lost.isEmpty());
        assertThat(lost).containsExactly(key + ": the store session expired");
        assertThat(locks.admin().watchedLeaseCount()).isZero();
        assertThat(manager().tryAcquire(key)).as("the store freed the key with the session").isPresent();
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class).hasMessageContaining("the store session expired");
    }

    @Test
    void aLossReportedForAnotherOwnerLeavesTheHolderAlone() {
        LockManager locks = manager(session, b -> { });
        try (LockHandle lock = locks.acquire(key, Duration.ZERO)) {
            session.reportLoss(key, "someone-else");
            session.reportLoss("another-key", "someone-else");
            assertThat(lock.state()).isEqualTo(LockState.HELD);
        }
    }

    @Test
    void aFixedLeaseGoesToTheSessionStoreAsItsTimeAndStillRunsOut() {
        LockManager locks = manager(session, b -> { });
        LockHandle lock = locks.acquire(LockRequest.builder(key).waitTime(Duration.ZERO).leaseTime(Duration.ofMillis(80)).build());
        assertThat(session.leasesAsked).containsExactly(80L);
        await("the fixed lease to run out", Duration.ofSeconds(5), () -> lock.state() == LockState.LOST);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
        assertThat(session.renewalsAsked).isEmpty();
    }
}
