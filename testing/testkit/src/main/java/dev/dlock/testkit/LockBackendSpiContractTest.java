package dev.dlock.testkit;

import dev.dlock.core.LockKind;
import dev.dlock.core.LockManager;
import dev.dlock.core.LockRequest;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.spi.HandOffResult;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LocalHandOff;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.SessionLeases;
import dev.dlock.core.spi.StoreNode;
import dev.dlock.core.spi.StoredHolder;
import dev.dlock.core.spi.TokensOnRequest;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.UUID;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatNoException;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The store-level tier of the contract: every "must" of {@link LockBackend}'s Javadoc, asked of a backend
 * directly, without a {@link LockManager} in between (except where the promise is the engine's: an undeclared kind
 * refused before the store). Where stores legitimately differ, a test asks the store's
 * {@linkplain LockBackend#capabilities() capabilities} or optional facets, never its class: no fencing tokens, no
 * hand-off, leases kept by the session instead of renewed.
 *
 * <p>{@link LockBackendContractTest} runs it on its store as a nested class; a backend author may also extend it
 * alone to check a new store early.
 */
public abstract class LockBackendSpiContractTest {

    /** The lease the tests take: long enough that nothing runs out while a test runs. */
    private static final long LEASE_MILLIS = 30_000;

    /** Creates backends (each with its own client) connected to the store under test. */
    protected abstract BackendFactory factory();

    /** The connection string {@link #factory()} understands. */
    protected abstract String connection();

    private final List<LockBackend> backends = new ArrayList<>();
    private LockBackend store;
    private String key;

    @BeforeEach
    void connect(TestInfo test) {
        key = "spi:" + test.getTestMethod().map(m -> m.getName()).orElse("test") + ":" + UUID.randomUUID();
        store = newBackend();
    }

    @AfterEach
    void disconnect() {
        backends.forEach(b -> factory().dispose(b));
        backends.clear();
    }

    /** A fresh backend with its own client, disposed after the test. */
    private LockBackend newBackend() {
        LockBackend backend = factory().create(connection());
        backends.add(backend);
        return backend;
    }

    private String owner(String name) {
        return name + ":" + UUID.randomUUID();
    }

    private long acquired(AcquireResult result) {
        assertThat(result).isInstanceOf(AcquireResult.Acquired.class);
        return ((AcquireResult.Acquired) result).fencingToken();
    }

    /**
     * The token of {@code owner}'s exclusive hold of the test's key, which {@code answer} (an acquisition or a
     * hand-off) issued, or else which {@code issuer} issues now, as the engine does when the holder first asks.
     */
    private long issued(LockBackend issuer, String owner, long answer) {
        if (answer != AcquireResult.Acquired.TOKEN_ON_REQUEST) {
            return answer;
        }
        OptionalLong token = tokensOnRequest(issuer).issueFencingToken(LockKind.EXCLUSIVE, key, owner);
        assertThat(token).as("the token %s asks for while it holds the key", owner).isPresent();
        return token.getAsLong();
    }

    private boolean fences() {
        return store.capabilities().fencing();
    }

    /** The store's fencing tokens issued on request: it must offer them when it answers {@code TOKEN_ON_REQUEST}. */
    private static TokensOnRequest tokensOnRequest(LockBackend store) {
        return store.capabilities().tokensOnRequest().orElseThrow(() -> new AssertionError(store
                + " took a key without its fencing token, yet offers no TokensOnRequest to issue it"));
    }

    /** The store's lease extension; a test calls it only once it assumed the store offers one. */
    private static LeaseExtension extension(LockBackend store) {
        return store.capabilities().leaseExtension().orElseThrow();
    }

    /** The store's local hand-off; a test calls it only once it assumed the store declares one. */
    private static LocalHandOff handOff(LockBackend store) {
        return store.capabilities().localHandOff().orElseThrow();
    }

    @Test
    void anAcquisitionRepeatedByItsOwnerIsAcquiredAgainWithALargerToken() {
        String a = owner("a");
        long first = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        if (fences()) {
            first = issued(store, a, first);
        }
        long repeat = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        if (fences()) {
            assertThat(issued(store, a, repeat)).as("the repeat's fencing token").isGreaterThan(first);
        }
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS)).as("another owner's attempt")
                .isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, repeat)).isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void aHeldKeyTellsAnotherOwnerHowLongTheLeaseHasLeftAtMost() {
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, owner("a"), LEASE_MILLIS));
        AcquireResult refused = newBackend().tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS);
        assertThat(refused).isInstanceOf(AcquireResult.Held.class);
        long remaining = ((AcquireResult.Held) refused).remainingTtlMillis();
        // At most the lease, plus the two seconds a store that counts whole seconds on a clock that ticks late
        // (memcached) adds.
        assertThat(remaining).as("remaining TTL (negative only when the store cannot tell)")
                .satisfiesAnyOf(ttl -> assertThat(ttl).isNegative(), ttl -> assertThat(ttl).isBetween(1L, LEASE_MILLIS + 2_000));
    }

    @Test
    void tokensRiseFromOneOwnerToTheNext() {
        assumeTrue(fences(), "the store issues no fencing tokens");
        String a = owner("a");
        String b = owner("b");
        long first = issued(store, a, acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS)));
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, first)).isEqualTo(ReleaseResult.RELEASED);
        LockBackend other = newBackend();
        long second = issued(other, b, acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS)));
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, second)).isEqualTo(ReleaseResult.RELEASED);
        String c = owner("a");
        long third = issued(store, c, acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, c, LEASE_MILLIS)));
        assertThat(List.of(first, second, third)).as("tokens of three acquisitions in turn").isSorted().doesNotHaveDuplicates();
        assertThat(first).as("a token").isPositive();
    }

    @Test
    void aRepeatedReleaseWithNoAcquisitionSinceAnswersAlreadyFree() {
        assumeTrue(store.capabilities().sessionLeases().isEmpty(), "a store that keeps leases by its session tells a repeat by its own record"
                + " of the lease, which a confirmed release removes (see LockBackend#release)");
        String a = owner("a");
        long token = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, token)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, token)).as("the same release again").isEqualTo(ReleaseResult.ALREADY_FREE);
    }

    @Test
    void aReleaseAfterAnotherOwnerTookTheKeyAnswersNotOwnerAndLeavesTheOtherOwnersLockAlone() {
        String a = owner("a");
        String b = owner("b");
        LockBackend other = newBackend();
        long token = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, token)).isEqualTo(ReleaseResult.RELEASED);

        long othersToken = acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS));
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, token)).as("while the other owner holds it").isEqualTo(ReleaseResult.NOT_OWNER);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, owner("c"), LEASE_MILLIS)).as("the other owner still holds it")
                .isInstanceOf(AcquireResult.Held.class);
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, othersToken)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, token)).as("after the other owner took and released it")
                .isEqualTo(ReleaseResult.NOT_OWNER);
    }

    /**
     * A read lease or permit is released like an exclusive lock: sharers release one after another and every one's
     * repeated release still answers "already free" (no release record overwrites another's), while a share the store
     * no longer holds for any other reason answers "not owner". Here a forced release straight in the store drops a
     * share, as a restart without persistence or a failover to a replica that missed it does: "not a holder" alone
     * must never read as a clean release, with no writer since and with one.
     */
    @Test
    void aRepeatedReleaseOfAShareIsAlreadyFreeAndAShareTheStoreLostIsNotOwner() {
        List<LockKind> shared = List.of(LockKind.READ, LockKind.permits(3)).stream().filter(store.capabilities()::supports).toList();
        assumeTrue(!shared.isEmpty(), "the store takes no shared kind");
        LockBackend other = newBackend();
        for (LockKind kind : shared) {
            String shareKey = key + ":" + kind.mode();
            String a = owner("a");
            String b = owner("b");
            String c = owner("c");
            long aToken = acquired(store.tryAcquire(kind, shareKey, a, LEASE_MILLIS));
            long bToken = acquired(other.tryAcquire(kind, shareKey, b, LEASE_MILLIS));
            long cToken = acquired(store.tryAcquire(kind, shareKey, c, LEASE_MILLIS));
            assertThat(store.release(kind, shareKey, a, aToken)).as("%s: a's release", kind).isEqualTo(ReleaseResult.RELEASED);
            assertThat(other.release(kind, shareKey, b, bToken)).as("%s: b's release", kind).isEqualTo(ReleaseResult.RELEASED);
            assertThat(store.release(kind, shareKey, a, aToken)).as("%s: a's release again, after b released too", kind)
                    .isEqualTo(ReleaseResult.ALREADY_FREE);
            assertThat(other.release(kind, shareKey, b, bToken)).as("%s: b's release again", kind).isEqualTo(ReleaseResult.ALREADY_FREE);

            Optional<HolderInspection> inspection = other.capabilities().holderInspection();
            assumeTrue(inspection.isPresent(), "the store offers no forced release to drop a share with");
            assertThat(inspection.get().forceRelease(kind, shareKey)).as("%s: the shares the store drops", kind)
                    .extracting(StoredHolder::owner).containsExactly(c);
            assertThat(store.release(kind, shareKey, c, cToken)).as("%s: the release of a share the store lost, nobody took it since", kind)
                    .isEqualTo(ReleaseResult.NOT_OWNER);
            LockKind taker = kind.mode() == LockKind.Mode.READ ? LockKind.WRITE : kind;
            String d = owner("d");
            long dToken = acquired(other.tryAcquire(taker, shareKey, d, LEASE_MILLIS));
            assertThat(store.release(kind, shareKey, c, cToken)).as("%s: the lost share's release while a %s lock holds the key", kind, taker)
                    .isEqualTo(ReleaseResult.NOT_OWNER);
            assertThat(other.release(taker, shareKey, d, dToken)).as("%s: the %s holder's release", kind, taker)
                    .isEqualTo(ReleaseResult.RELEASED);
        }
    }

    @Test
    void aRenewalBatchAnswersOncePerRequestInOrder() {
        assumeTrue(store.capabilities().sessionLeases().isEmpty(), "the store keeps leases by its session and is never renewed");
        String a = owner("a");
        List<String> keys = keysOnOneNode(store.capabilities().supports(LockKind.READ) ? 5 : 4);
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, keys.get(0), a, 2_000));
        acquired(newBackend().tryAcquire(LockKind.EXCLUSIVE, keys.get(1), owner("b"), LEASE_MILLIS));
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, keys.get(3), a, 2_000));
        List<LeaseRenewal> batch = new ArrayList<>(List.of(
                new LeaseRenewal(keys.get(0), a, LEASE_MILLIS, LockKind.EXCLUSIVE),
                new LeaseRenewal(keys.get(1), a, LEASE_MILLIS, LockKind.EXCLUSIVE),
                new LeaseRenewal(keys.get(2), a, LEASE_MILLIS, LockKind.EXCLUSIVE),
                new LeaseRenewal(keys.get(3), a, LEASE_MILLIS, LockKind.EXCLUSIVE)));
        List<RenewalResult> expected = new ArrayList<>(List.of(RenewalResult.RENEWED, RenewalResult.TAKEN, RenewalResult.EXPIRED,
                RenewalResult.RENEWED));
        if (keys.size() == 5) {
            acquired(store.tryAcquire(LockKind.READ, keys.get(4), a, 2_000));
            batch.add(new LeaseRenewal(keys.get(4), a, LEASE_MILLIS, LockKind.READ));
            expected.add(RenewalResult.RENEWED);
        }
        assertThat(store.renew(batch)).as("answers to renewals of: held, another's, never taken, held"
                + (keys.size() == 5 ? ", a read lease" : "")).containsExactlyElementsOf(expected);

        AcquireResult refused = newBackend().tryAcquire(LockKind.EXCLUSIVE, keys.get(0), owner("c"), LEASE_MILLIS);
        assertThat(refused).as("the renewed key").isInstanceOf(AcquireResult.Held.class);
        long remaining = renewedLeaseRemainingMillis(keys.get(0), (AcquireResult.Held) refused);
        if (remaining >= 0) {
            assertThat(remaining).as("the renewed lease's remaining TTL, taken at 2 s and renewed to %s ms", LEASE_MILLIS)
                    .isGreaterThan(2_000);
        }
    }

    /**
     * How long {@code key}, just renewed and answered RENEWED, stays held, in milliseconds (negative when the store
     * cannot tell); {@code refusal} is another owner's refused acquisition of it. By default the refusal's TTL. A store
     * that renews on a quorum of nodes overrides it to read the lease on the quorum: a refusal there may answer with
     * the TTL of a node outside the quorum whose renewal has not landed yet, a lower bound (Redlock answers the least
     * TTL among the nodes that decided the refusal).
     */
    protected long renewedLeaseRemainingMillis(String key, AcquireResult.Held refusal) {
        return refusal.remainingTtlMillis();
    }

    /** {@code count} keys that the store serves from one node (the engine only batches renewals of one node). */
    private List<String> keysOnOneNode(int count) {
        List<String> keys = new ArrayList<>(List.of(key + ":0"));
        StoreNode node = store.capabilities().renewalGrouping().map(g -> g.nodeOf(keys.get(0))).orElse(StoreNode.SINGLE);
        for (int i = 1; keys.size() < count; i++) {
            String candidate = key + ":" + i;
            if (store.capabilities().renewalGrouping().map(g -> g.nodeOf(candidate)).orElse(StoreNode.SINGLE).equals(node)) {
                keys.add(candidate);
            }
        }
        assertThat(store.capabilities().renewalGrouping().map(g -> g.maxBatchSize()).orElse(Integer.MAX_VALUE))
                .as("the store's largest renew batch").isGreaterThanOrEqualTo(count);
        return keys;
    }

    @Test
    void aHandOffByAnOwnerThatDoesNotHoldTheKeyAnswersNotHeld() {
        assumeTrue(store.capabilities().localHandOff().isPresent(), "the store declares no hand-off");
        String a = owner("a");
        String b = owner("b");
        assertThat(handOff(store).handOff(key, a, owner("a2"), 0)).as("a free key").isEqualTo(HandOffResult.NOT_HELD);
        LockBackend other = newBackend();
        long othersToken = acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS));
        assertThat(handOff(store).handOff(key, a, owner("a2"), LEASE_MILLIS)).as("a key another owner holds").isEqualTo(HandOffResult.NOT_HELD);
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, othersToken)).as("the holder's release").isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void aHandOffKeepsTheKeyTakenWithALargerToken() {
        assumeTrue(store.capabilities().localHandOff().isPresent(), "the store declares no hand-off");
        String a = owner("a");
        long token = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        if (fences()) {
            token = issued(store, a, token);
        }
        String a2 = owner("a2");
        HandOffResult passed = handOff(store).handOff(key, a, a2, LEASE_MILLIS);
        assertThat(passed).isInstanceOf(HandOffResult.Passed.class);
        long next = ((HandOffResult.Passed) passed).fencingToken();
        if (fences()) {
            next = issued(store, a2, next);
            assertThat(next).as("the token of the hand-off").isGreaterThan(token);
        }
        assertThat(newBackend().tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS)).as("another owner's attempt")
                .isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a2, next)).isEqualTo(ReleaseResult.RELEASED);
    }

    /**
     * After a hand-off the key is the next owner's: every command still on its way for the previous owner misses
     * (a renewal that would set its own lease, a release, a token issuance), and a repeated hand-off is "passed"
     * again, not "not held".
     */
    @Test
    void aHandOffGivesTheKeyToTheNextOwnerSoThePreviousOwnersLateCommandsMiss() {
        assumeTrue(store.capabilities().localHandOff().isPresent(), "the store declares no hand-off");
        String a = owner("a");
        String a2 = owner("a2");
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assertThat(handOff(store).handOff(key, a, a2, LEASE_MILLIS)).isInstanceOf(HandOffResult.Passed.class);
        assertThat(handOff(store).handOff(key, a, a2, LEASE_MILLIS)).as("the same hand-off repeated (a client retry)")
                .isInstanceOf(HandOffResult.Passed.class);
        assertThat(store.renew(List.of(new LeaseRenewal(key, a, 1_000))).get(0)).as("the previous owner's late renewal")
                .isEqualTo(RenewalResult.TAKEN);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, AcquireResult.Acquired.TOKEN_ON_REQUEST))
                .as("the previous owner's late release").isEqualTo(ReleaseResult.NOT_OWNER);
        if (fences()) {
            // A store that issues every token with its acquisition offers no issuance to ask.
            store.capabilities().tokensOnRequest().ifPresent(issuer -> assertThat(issuer.issueFencingToken(LockKind.EXCLUSIVE,
                    key, a)).as("a token asked for by the previous owner").isEmpty());
        }
        assertThat(newBackend().tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS)).as("another owner's attempt")
                .isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, key, a2, AcquireResult.Acquired.TOKEN_ON_REQUEST))
                .as("the next owner's release").isEqualTo(ReleaseResult.RELEASED);
    }

    /**
     * A shortened lease ({@code lockAtLeastFor}) belongs to its retired owner: it frees itself when its time is up, and
     * a renewal of the owner sent before the shortening but landing after it cannot extend it again.
     */
    @Test
    void aShortenedLeaseFreesItselfAndTheOwnersLateRenewalCannotExtendIt() throws Exception {
        String a = owner("a");
        assumeTrue(store.capabilities().sessionLeases().map(SessionLeases::endsShortenedLeases).orElse(true),
                "the store keeps leases by its session and cannot time a shortened one: no lockAtLeastFor");
        String retired = owner("a-retired");
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assertThat(store.shorten(LockKind.EXCLUSIVE, key, a, retired, 1_500)).isEqualTo(RenewalResult.RENEWED);
        assertThat(store.shorten(LockKind.EXCLUSIVE, key, a, retired, 1_500)).as("the same shortening repeated")
                .isEqualTo(RenewalResult.RENEWED);
        assertThat(store.renew(List.of(new LeaseRenewal(key, a, LEASE_MILLIS))).get(0)).as("the owner's late renewal")
                .isNotEqualTo(RenewalResult.RENEWED);
        LockBackend other = newBackend();
        String b = owner("b");
        assertThat(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS)).as("another owner, while the shortened lease lasts")
                .isInstanceOf(AcquireResult.Held.class);
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
        AcquireResult taken;
        do {
            Thread.sleep(100);
            taken = other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS);
        } while (!(taken instanceof AcquireResult.Acquired) && System.nanoTime() - deadline < 0);
        assertThat(taken).as("another owner once the shortened lease ran out (the lease was %s ms)", LEASE_MILLIS)
                .isInstanceOf(AcquireResult.Acquired.class);
        other.release(LockKind.EXCLUSIVE, key, b, ((AcquireResult.Acquired) taken).fencingToken());
    }

    /**
     * An extension gives the live lease a new term under a new owner: a repeat of it is done already, and every command
     * of the earlier owner that lands later (a renewal, a retried acquisition, a release, a token issuance) misses it.
     */
    @Test
    void anExtendedLeaseBelongsToItsNewOwnerAndTheEarlierOwnersLateCommandsMissIt() {
        assumeTrue(store.capabilities().leaseExtension().isPresent(), "the store extends no lease");
        String a = owner("a");
        String next = owner("a-next");
        long first = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assertThat(extension(store).extend(LockKind.EXCLUSIVE, key, a, next, LEASE_MILLIS)).isEqualTo(RenewalResult.RENEWED);
        assertThat(extension(store).extend(LockKind.EXCLUSIVE, key, a, next, LEASE_MILLIS)).as("the same extension repeated")
                .isEqualTo(RenewalResult.RENEWED);
        assertThat(store.renew(List.of(new LeaseRenewal(key, a, 1_000))).get(0)).as("the earlier owner's late renewal")
                .isNotEqualTo(RenewalResult.RENEWED);
        assertThat(store.tryAcquire(LockKind.EXCLUSIVE, key, a, 1_000)).as("the earlier owner's retried acquisition")
                .isInstanceOf(AcquireResult.Held.class);
        store.withdraw(LockKind.EXCLUSIVE, key, a);
        if (fences() && first == AcquireResult.Acquired.TOKEN_ON_REQUEST) {
            assertThat(tokensOnRequest(store).issueFencingToken(LockKind.EXCLUSIVE, key, a)).as("the earlier owner's late token issuance")
                    .isEmpty();
            assertThat(tokensOnRequest(store).issueFencingToken(LockKind.EXCLUSIVE, key, next)).as("the new term's token").isPresent();
        }
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, AcquireResult.Acquired.TOKEN_ON_REQUEST)).as("the earlier owner's late release")
                .isNotEqualTo(ReleaseResult.RELEASED);
        assertThat(newBackend().tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS)).as("another owner's attempt")
                .isInstanceOf(AcquireResult.Held.class);
        assertThat(store.release(LockKind.EXCLUSIVE, key, next, AcquireResult.Acquired.TOKEN_ON_REQUEST))
                .as("the new term's release").isEqualTo(ReleaseResult.RELEASED);
    }

    /** An extension that finds the key free, or held by another owner, changes nothing: it revives no lease. */
    @Test
    void anExtensionOfAKeyThatIsFreeOrAnothersChangesNothing() {
        assumeTrue(store.capabilities().leaseExtension().isPresent(), "the store extends no lease");
        String a = owner("a");
        assertThat(extension(store).extend(LockKind.EXCLUSIVE, key, a, owner("a-next"), LEASE_MILLIS)).as("an extension of a free key")
                .isNotEqualTo(RenewalResult.RENEWED);
        LockBackend other = newBackend();
        String b = owner("b");
        long token = acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS));
        assertThat(extension(store).extend(LockKind.EXCLUSIVE, key, a, owner("a-next"), LEASE_MILLIS)).as("an extension of another's key")
                .isNotEqualTo(RenewalResult.RENEWED);
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, token)).as("the other owner's release").isEqualTo(ReleaseResult.RELEASED);
    }

    /**
     * A store that takes a key without its token issues it only to the owner that holds the key, larger than every
     * earlier holder's, and never once the hold ended: not after the release, not to another owner.
     */
    @Test
    void aTokenOnRequestIsIssuedToTheHolderOnlyAndRisesAboveEveryEarlierHolders() {
        String a = owner("a");
        String b = owner("b");
        long first = acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, a, LEASE_MILLIS));
        assumeTrue(fences() && first == AcquireResult.Acquired.TOKEN_ON_REQUEST, "the store issues every token with its acquisition");
        LockBackend other = newBackend();
        assertThat(tokensOnRequest(other).issueFencingToken(LockKind.EXCLUSIVE, key, b)).as("a token asked for by an owner that does not hold the key")
                .isEmpty();
        long issuedToA = issued(store, a, first);
        assertThat(issuedToA).as("the holder's token").isPositive();
        assertThat(store.release(LockKind.EXCLUSIVE, key, a, issuedToA)).isEqualTo(ReleaseResult.RELEASED);
        assertThat(tokensOnRequest(store).issueFencingToken(LockKind.EXCLUSIVE, key, a)).as("a token asked for after the release").isEmpty();

        long taken = acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS));
        assertThat(tokensOnRequest(store).issueFencingToken(LockKind.EXCLUSIVE, key, a)).as("the earlier holder's token while another holds the key")
                .isEmpty();
        assertThat(issued(other, b, taken)).as("the next holder's token").isGreaterThan(issuedToA);
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, taken)).isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void aWithdrawalNeverThrowsAndLeavesAHoldersLockAlone() {
        String b = owner("b");
        for (LockKind kind : declaredKinds()) {
            assertThatNoException().as("withdraw of a %s lock on a key never seen", kind)
                    .isThrownBy(() -> store.withdraw(kind, key + ":never-seen", owner("a")));
        }
        LockBackend other = newBackend();
        long token = acquired(other.tryAcquire(LockKind.EXCLUSIVE, key, b, LEASE_MILLIS));
        assertThatNoException().isThrownBy(() -> store.withdraw(LockKind.EXCLUSIVE, key, owner("a")));
        assertThat(other.release(LockKind.EXCLUSIVE, key, b, token)).as("the holder's release after another's withdrawal")
                .isEqualTo(ReleaseResult.RELEASED);
    }

    @Test
    void aPingAnswersWithTheRoundTrip() {
        assertThat(store.ping()).as("round trip in nanoseconds").isNotNegative();
    }

    @Test
    void everyDeclaredKindCanBeTakenAndReleased() {
        String a = owner("a");
        for (LockKind kind : declaredKinds()) {
            String kindKey = key + ":" + kind.mode();
            long token = acquired(store.tryAcquire(kind, kindKey, a, LEASE_MILLIS));
            assertThat(store.release(kind, kindKey, a, token)).as("release of a %s lock", kind).isEqualTo(ReleaseResult.RELEASED);
        }
    }

    @Test
    void anUndeclaredKindIsRefusedBeforeTheStoreAndByTheStoreItself() {
        BackendCapabilities declared = store.capabilities();
        List<LockKind> undeclared = Arrays.stream(LockKind.Mode.values()).map(LockBackendSpiContractTest::kindOf)
                .filter(kind -> !declared.supports(kind)).toList();
        assumeTrue(!undeclared.isEmpty(), "the store takes every kind");
        RecordingBackend recorder = new RecordingBackend(store);
        try (LockManager locks = LockManager.builder(recorder).build()) {
            for (LockKind kind : undeclared) {
                assertThatThrownBy(() -> locks.tryAcquire(LockRequest.builder(key).kind(kind).build()))
                        .as("a %s lock through the engine", kind).isInstanceOf(IllegalArgumentException.class);
                assertThatThrownBy(() -> store.tryAcquire(kind, key, owner("a"), LEASE_MILLIS))
                        .as("a %s lock asked of the store", kind).isInstanceOf(UnsupportedOperationException.class)
                        .hasMessageContaining(kind.toString());
            }
            assertThat(recorder.acquires).as("acquisitions that reached the store").hasValue(0);
        }
        acquired(store.tryAcquire(LockKind.EXCLUSIVE, key, owner("b"), LEASE_MILLIS));
    }

    private List<LockKind> declaredKinds() {
        return store.capabilities().modes().stream().map(LockBackendSpiContractTest::kindOf).toList();
    }

    /** A kind of {@code mode}: two permits for {@link LockKind.Mode#PERMITS}. */
    private static LockKind kindOf(LockKind.Mode mode) {
        return mode == LockKind.Mode.PERMITS ? LockKind.permits(2) : LockKind.of(mode);
    }
}
