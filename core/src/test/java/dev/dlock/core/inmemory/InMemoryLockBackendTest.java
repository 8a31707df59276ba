package dev.dlock.core.inmemory;

import dev.dlock.core.LockKind;
import dev.dlock.core.inmemory.InMemoryLockBackend;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.ReleaseNotices;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The in-memory store through the SPI, on a clock the test moves: the answers the Redis scripts give, without waiting. */
class InMemoryLockBackendTest {

    private final AtomicLong now = new AtomicLong(TimeUnit.DAYS.toNanos(3));
    private final InMemoryLockBackend store = InMemoryLockBackend.builder().clock(now::get).build();

    private void advance(long millis) {
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(millis));
    }

    private long acquired(String key, String owner, long leaseMillis) {
        AcquireResult result = store.tryAcquire(LockKind.EXCLUSIVE, key, owner, leaseMillis);
        assertThat(result).as("%s takes %s", owner, key).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    private long acquired(LockKind kind, String key, String owner, long leaseMillis) {
        AcquireResult result = store.tryAcquire(kind, key, owner, leaseMillis);
        assertThat(result).as("%s takes %s as %s", owner, key, kind).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    private List<RenewalResult> renew(String key, String owner, long leaseMillis) {
        return store.renew(List.of(new LeaseRenewal(key, owner, leaseMillis)));
    }

    // ------------------------------------------------------------------ acquire

    @Test
    void aHeldKeyAnswersWithTheHoldersRemainingLeaseUntilItRunsOut() {
        acquired("k", "a", 1000);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).isEqualTo(new AcquireResult.Held(1000));
        advance(400);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).isEqualTo(new AcquireResult.Held(600));
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(599) + 1);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).as("a part of a millisecond left rounds up").isEqualTo(new AcquireResult.Held(1));
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(1) - 1);
        acquired("k", "b", 1000);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "a", 1000)).as("the lease ran out and b holds it now").isEqualTo(new AcquireResult.Held(1000));
    }

    @Test
    void theOwnerTakingItsKeyAgainExtendsTheLeaseWithAFreshToken() {
        long first = acquired("k", "a", 1000);
        advance(900);
        long second = acquired("k", "a", 1000);
        assertThat(second).isGreaterThan(first);
        advance(900);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).as("extended from the second call").isEqualTo(new AcquireResult.Held(100));
    }

    @Test
    void fencingTokensOfAKeyIncreaseAcrossReleasesRunOutLeasesForgottenRecordsAndAWipe() {
        List<Long> tokens = new ArrayList<>();
        long token = acquired("k", "a", 1000);
        tokens.add(token);
        store.release(LockKind.EXCLUSIVE, "k", "a", token);
        tokens.add(acquired("k", "b", 1000));
        advance(1000);
        tokens.add(acquired("k", "c", 1000));
        advance(TimeUnit.SECONDS.toMillis(InMemoryLockBackend.IDLE_RECORD_RETENTION_SECONDS) + 2000);
        forceSweep();
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "c", tokens.get(2))).as("the record of k is forgotten").isEqualTo(ReleaseResult.NOT_OWNER);
        tokens.add(acquired("k", "d", 1000));
        store.close();
        tokens.add(acquired("k", "e", 1000));
        assertThat(tokens).isSorted().doesNotHaveDuplicates();
    }

    @Test
    void aLeaseShorterThanAMillisecondIsRefused() {
        assertThatThrownBy(() -> store.tryAcquire(LockKind.EXCLUSIVE, "k", "a", 0)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("leaseMillis");
        acquired("k", "a", 1000);
        assertThatThrownBy(() -> renew("k", "a", 0)).isInstanceOf(IllegalArgumentException.class);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).as("the refused renewal changed nothing").isEqualTo(new AcquireResult.Held(1000));
    }

    // ------------------------------------------------------------------ release

    @Test
    void onlyTheOwnerReleasesAndARepeatedReleaseIsAlreadyFree() {
        long token = acquired("k", "a", 1000);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "b", token)).isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "k", "b", 1000)).as("a stranger's release changed nothing").isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).as("the same release again").isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "b", token - 1)).as("an older token").isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void aReleaseAfterAnotherAcquisitionIsNotOwnerEvenWhenTheKeyIsFreeAgain() {
        long token = acquired("k", "a", 1000);
        store.release(LockKind.EXCLUSIVE, "k", "a", token);
        long other = acquired("k", "b", 1000);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).as("while b holds it").isEqualTo(ReleaseResult.NOT_OWNER);
        store.release(LockKind.EXCLUSIVE, "k", "b", other);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).as("after b released it").isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void aLeaseThatRanOutIsAlreadyFreeUntilSomeoneTakesTheKey() {
        long token = acquired("k", "a", 1000);
        advance(1000);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).isEqualTo(ReleaseResult.ALREADY_FREE);
        acquired("k", "b", 1000);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).isEqualTo(ReleaseResult.NOT_OWNER);
    }

    @Test
    void aKeyNeverTakenIsNotOwnedByAnyone() {
        assertThat(store.release(LockKind.EXCLUSIVE, "never", "a", 1)).isEqualTo(ReleaseResult.NOT_OWNER);
    }

    // ------------------------------------------------------------------ renew

    @Test
    void renewalsExtendOnlyTheOwnersLiveLeasesAndAnswerInOrder() {
        acquired("mine", "a", 1000);
        acquired("theirs", "b", 1000);
        long released = acquired("released", "a", 1000);
        store.release(LockKind.EXCLUSIVE, "released", "a", released);
        acquired("ranOut", "a", 100);
        advance(500);
        List<RenewalResult> results = store.renew(List.of(
                new LeaseRenewal("mine", "a", 2000),
                new LeaseRenewal("theirs", "a", 2000),
                new LeaseRenewal("released", "a", 2000),
                new LeaseRenewal("ranOut", "a", 2000),
                new LeaseRenewal("never", "a", 2000)));
        assertThat(results).containsExactly(RenewalResult.RENEWED, RenewalResult.TAKEN, RenewalResult.EXPIRED,
                RenewalResult.EXPIRED, RenewalResult.EXPIRED);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "mine", "b", 1000)).as("2000 ms from the renewal").isEqualTo(new AcquireResult.Held(2000));
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "theirs", "c", 1000)).as("a stranger's renewal extended nothing")
                .isEqualTo(new AcquireResult.Held(500));
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "ranOut", "b", 1000)).as("a late renewal revived nothing").isInstanceOf(AcquireResult.Acquired.class);
    }

    @Test
    void aRenewalAtTheLeasesEndIsTooLate() {
        acquired("k", "a", 1000);
        advance(1000);
        assertThat(renew("k", "a", 1000)).containsExactly(RenewalResult.EXPIRED);
    }

    // ------------------------------------------------------------------ release notices

    @Test
    void aReleaseWakesTheListenersOfThatKeyOnlyAndAThrowingListenerHarmsNoOne() throws InterruptedException {
        ReleaseNotices notices = store.capabilities().releaseNotices().orElseThrow();
        List<String> woken = new CopyOnWriteArrayList<>();
        ReleaseNotices.Subscription failing = notices.subscribe("k", () -> {
            throw new IllegalStateException("listener bug");
        });
        ReleaseNotices.Subscription first = notices.subscribe("k", () -> woken.add("first"));
        ReleaseNotices.Subscription second = notices.subscribe("k", () -> woken.add("second"));
        ReleaseNotices.Subscription other = notices.subscribe("other", () -> woken.add("other"));
        assertThat(first.isActive()).as("active at once").isTrue();
        assertThat(first.awaitActive(Duration.ZERO)).isTrue();

        long token = acquired("k", "a", 1000);
        assertThat(woken).as("nothing released yet").isEmpty();
        store.release(LockKind.EXCLUSIVE, "k", "b", token);
        assertThat(woken).as("a refused release").isEmpty();
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(woken).containsExactlyInAnyOrder("first", "second");

        second.close();
        assertThat(second.isActive()).isFalse();
        woken.clear();
        store.release(LockKind.EXCLUSIVE, "k", "a", token);
        assertThat(woken).as("a repeated release is no new release").isEmpty();
        store.release(LockKind.EXCLUSIVE, "k", "a", acquired("k", "a", 1000));
        assertThat(woken).as("a closed subscription hears nothing").containsExactly("first");
        first.close();
        failing.close();
        other.close();
    }

    @Test
    void aLeaseRunningOutSendsNoNotice() {
        List<String> woken = new CopyOnWriteArrayList<>();
        ReleaseNotices.Subscription subscription = store.capabilities().releaseNotices().orElseThrow().subscribe("k", () -> woken.add("k"));
        acquired("k", "a", 1000);
        advance(2000);
        acquired("k", "b", 1000);
        assertThat(woken).isEmpty();
        subscription.close();
    }

    // ------------------------------------------------------------------ memory and close

    @Test
    void idleRecordsAreForgottenAfterTheirRetentionSoMemoryStaysBounded() {
        int keys = 5 * InMemoryLockBackend.MIN_SWEEP_THRESHOLD;
        long firstOrder = acquired("order:0", "a", 1000);
        store.release(LockKind.EXCLUSIVE, "order:0", "a", firstOrder);
        for (int i = 1; i < keys; i++) {
            String key = "order:" + i;
            store.release(LockKind.EXCLUSIVE, key, "a", acquired(key, "a", 1000));
        }
        long held = acquired("held", "a", TimeUnit.HOURS.toMillis(2));
        advance(TimeUnit.SECONDS.toMillis(InMemoryLockBackend.IDLE_RECORD_RETENTION_SECONDS) + 1);
        long recent = acquired("recent", "a", 1000);
        store.release(LockKind.EXCLUSIVE, "recent", "a", recent);
        advance(1000);
        for (int i = 0; i < keys; i++) {
            String key = "later:" + i;
            store.release(LockKind.EXCLUSIVE, key, "a", acquired(key, "a", 1000));
        }
        assertThat(store.recordCount()).as("records kept, %d keys used since the retention", keys + 2)
                .isBetween(keys + 2, 2 * keys - 1);
        assertThat(store.release(LockKind.EXCLUSIVE, "order:0", "a", firstOrder)).as("an idle record past its retention is forgotten")
                .isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(store.release(LockKind.EXCLUSIVE, "recent", "a", recent)).as("a record within its retention is kept").isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, "held", "b", 1000)).as("a held key is never forgotten").isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, "held", "a", held)).isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void readWriteAndPermitRecordsKeepTheirLastTokenWhileIdleAndAreForgottenAfterTheirRetention() {
        long write = acquired(LockKind.WRITE, "written", "a", 1000);
        assertThat(store.release(LockKind.WRITE, "written", "a", write)).isEqualTo(ReleaseResult.RELEASED);
        long read = acquired(LockKind.READ, "read", "a", 1000);
        assertThat(store.release(LockKind.READ, "read", "a", read)).isEqualTo(ReleaseResult.RELEASED);
        long permit = acquired(LockKind.permits(2), "permits", "a", 1000);
        assertThat(store.release(LockKind.permits(2), "permits", "a", permit)).isEqualTo(ReleaseResult.RELEASED);
        advance(TimeUnit.SECONDS.toMillis(InMemoryLockBackend.IDLE_RECORD_RETENTION_SECONDS) / 2);
        assertThat(store.release(LockKind.WRITE, "written", "a", write)).as("a repeated release within the retention")
                .isEqualTo(ReleaseResult.ALREADY_FREE);
        assertThat(store.recordCount()).as("idle records of every kind, kept").isEqualTo(3);
        advance(TimeUnit.SECONDS.toMillis(InMemoryLockBackend.IDLE_RECORD_RETENTION_SECONDS));
        forceSweep();
        assertThat(store.recordCount()).as("only the sweep's fillers are left").isEqualTo(2 * InMemoryLockBackend.MIN_SWEEP_THRESHOLD);
        assertThat(store.release(LockKind.WRITE, "written", "a", write)).as("the record of the write lock is forgotten")
                .isEqualTo(ReleaseResult.NOT_OWNER);
    }

    /**
     * A read lease or permit no longer held is "already free" only as its own release repeated (each sharer's release
     * recorded for the idle retention, the oldest past {@link InMemoryLockBackend#MAX_SHARE_RELEASE_RECORDS} dropped);
     * a share the store lost in a restart ({@code close()}) or a forced release is "not owner".
     */
    @Test
    void aReleasedShareRepeatsAsAlreadyFreeAndALostShareIsNotOwner() {
        for (LockKind kind : List.of(LockKind.READ, LockKind.permits(3))) {
            String key = "shares:" + kind.mode();
            long a = acquired(kind, key, "a", 1000);
            long b = acquired(kind, key, "b", 1000);
            long c = acquired(kind, key, "c", 1000);
            assertThat(store.release(kind, key, "a", a)).isEqualTo(ReleaseResult.RELEASED);
            assertThat(store.release(kind, key, "b", b)).isEqualTo(ReleaseResult.RELEASED);
            assertThat(store.release(kind, key, "a", a)).as("%s: a's repeat after b's release", kind).isEqualTo(ReleaseResult.ALREADY_FREE);
            store.capabilities().holderInspection().orElseThrow().forceRelease(kind, key);
            assertThat(store.release(kind, key, "c", c)).as("%s: a share a forced release removed", kind).isEqualTo(ReleaseResult.NOT_OWNER);
            advance(TimeUnit.SECONDS.toMillis(InMemoryLockBackend.IDLE_RECORD_RETENTION_SECONDS) + 1);
            assertThat(store.release(kind, key, "b", b)).as("%s: a repeat after its record's retention", kind).isEqualTo(ReleaseResult.NOT_OWNER);

            long d = acquired(kind, key, "d", 1000);
            store.close();
            assertThat(store.release(kind, key, "d", d)).as("%s: a share the store lost in its restart", kind).isEqualTo(ReleaseResult.NOT_OWNER);
        }
        LockKind many = LockKind.permits(2);
        for (int i = 0; i <= InMemoryLockBackend.MAX_SHARE_RELEASE_RECORDS; i++) {
            long token = acquired(many, "bounded", "p" + i, 1000);
            assertThat(store.release(many, "bounded", "p" + i, token)).isEqualTo(ReleaseResult.RELEASED);
        }
        assertThat(store.release(many, "bounded", "p0", 0)).as("the oldest record, past the bound").isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(store.release(many, "bounded", "p1", 0)).as("the oldest record kept").isEqualTo(ReleaseResult.ALREADY_FREE);
    }

    @Test
    void closeForgetsEveryLockAndWakesEveryWaiter() {
        AtomicInteger woken = new AtomicInteger();
        ReleaseNotices.Subscription subscription = store.capabilities().releaseNotices().orElseThrow().subscribe("k", woken::incrementAndGet);
        long token = acquired("k", "a", 1000);
        store.close();
        assertThat(woken).hasValue(1);
        assertThat(store.release(LockKind.EXCLUSIVE, "k", "a", token)).as("the store forgot the lease").isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(acquired("k", "b", 1000)).isGreaterThan(token);
        subscription.close();
    }

    @Test
    void pingAnswersAtOnce() {
        assertThat(store.ping()).isPositive().isLessThan(TimeUnit.SECONDS.toNanos(1));
    }

    /** Grows the store past its sweep threshold with keys that are free at once, so that a sweep runs. */
    private void forceSweep() {
        for (int i = 0; i < 2 * InMemoryLockBackend.MIN_SWEEP_THRESHOLD; i++) {
            String key = "filler:" + now.get() + ":" + i;
            store.release(LockKind.EXCLUSIVE, key, "f", acquired(key, "f", 1000));
        }
    }

    // ------------------------------------------------------------------ holders and forced release

    @Test
    void holdersOfEveryKindAreReadWithoutChangingThemAndAForcedReleaseFreesThemKeepingTheCounter() {
        HolderInspection inspection = store.capabilities().holderInspection().orElseThrow();
        long exclusive = acquired(LockKind.EXCLUSIVE, "x", "a", 1000);
        acquired(LockKind.READ, "rw", "r1", 1000);
        acquired(LockKind.READ, "rw", "r2", 2000);
        acquired(LockKind.WRITE, "w", "w1", 1000);
        acquired(LockKind.permits(2), "p", "p1", 1000);
        advance(400);

        assertThat(inspection.holders(LockKind.EXCLUSIVE, "x")).containsExactly(new StoredHolder("a", 600));
        assertThat(inspection.holders(LockKind.FAIR, "x")).as("exclusive and fair are one lock").containsExactly(new StoredHolder("a", 600));
        assertThat(inspection.holders(LockKind.READ, "rw")).containsExactlyInAnyOrder(new StoredHolder("r1", 600), new StoredHolder("r2", 1600));
        assertThat(inspection.holders(LockKind.WRITE, "rw")).isEmpty();
        assertThat(inspection.holders(LockKind.WRITE, "w")).containsExactly(new StoredHolder("w1", 600));
        assertThat(inspection.holders(LockKind.permits(2), "p")).containsExactly(new StoredHolder("p1", 600));
        assertThat(inspection.holders(LockKind.EXCLUSIVE, "x")).as("reading changed nothing").containsExactly(new StoredHolder("a", 600));

        List<String> woken = new CopyOnWriteArrayList<>();
        store.capabilities().releaseNotices().orElseThrow().subscribe("x", () -> woken.add("x"));
        assertThat(inspection.forceRelease(LockKind.EXCLUSIVE, "x")).containsExactly(new StoredHolder("a", 600));
        assertThat(woken).as("waiters told the key is free").contains("x");
        assertThat(inspection.holders(LockKind.EXCLUSIVE, "x")).isEmpty();
        assertThat(store.release(LockKind.EXCLUSIVE, "x", "a", exclusive)).as("the removed owner's release is refused, never 'already free'")
                .isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(acquired(LockKind.EXCLUSIVE, "x", "b", 1000)).as("the next token").isGreaterThan(exclusive);

        assertThat(inspection.forceRelease(LockKind.READ, "rw")).hasSize(2);
        assertThat(inspection.forceRelease(LockKind.WRITE, "w")).containsExactly(new StoredHolder("w1", 600));
        assertThat(inspection.forceRelease(LockKind.permits(2), "p")).containsExactly(new StoredHolder("p1", 600));
        assertThat(inspection.forceRelease(LockKind.permits(2), "p")).as("nothing left to free").isEmpty();
        acquired(LockKind.WRITE, "rw", "w2", 1000);
        acquired(LockKind.WRITE, "w", "w3", 1000);
        assertThat(store.renew(List.of(new LeaseRenewal("p", "p1", 1000, LockKind.permits(2))))).as("a removed share is not renewed")
                .containsExactly(RenewalResult.EXPIRED);
    }
}
