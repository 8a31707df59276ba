package dev.dlock.core;

import dev.dlock.core.spi.RenewalResult;
import dev.dlock.testkit.RecordingBackend;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The engine's side of {@link LockHandle#extend}, on the in-memory store: the holder's estimate of an extended lease,
 * an extension whose outcome stays unknown, {@code lockAtLeastFor} across an extension, a store that cannot extend, and
 * the manager's shutdown racing an extension in flight. The store-side promises (late commands of an earlier term miss
 * the new one) run on every store in the testkit's {@code LeaseExtensionContractTest}.
 */
class LeaseExtensionTest extends EngineTestSupport {

    private LockRequest fixed(Duration lease) {
        return LockRequest.builder(key).leaseTime(lease).waitTime(Duration.ZERO).build();
    }

    /**
     * The store confirms an extension late (a slow reply): the holder counts the new term from when the extension was
     * sent, since the store's term may have started then, never from when the answer came.
     */
    @Test
    void theNewTermIsCountedFromTheExtensionsSendNotItsAnswer() {
        RecordingBackend tapped = tapped();
        tapped.aroundExtend(call -> {
            RenewalResult answer = call.get();
            sleep(600);
            return answer;
        });
        LockHandle lock = manager(tapped, b -> { }).acquire(fixed(Duration.ofSeconds(10)));
        lock.extend(Duration.ofMillis(1_000));
        long sentAt = tapped.sentExtensions.get(0).sentAtNanos();
        sleep(Math.max(0, TimeUnit.NANOSECONDS.toMillis(sentAt + TimeUnit.MILLISECONDS.toNanos(1_050) - System.nanoTime())));
        assertThat(lock.isHeld()).as("held 1050 ms after the extension to 1000 ms was sent (answered 600 ms later)").isFalse();
        assertThat(lock.state()).isEqualTo(LockState.LOST);
    }

    /**
     * An extension to a shorter lease whose reply never comes (the store applied it): the holder cannot tell which term
     * the store holds, so it counts the lease until the earlier end, the new one.
     */
    @Test
    void anExtensionWhoseOutcomeStaysUnknownCountsTheLeaseUntilTheEarlierOfItsTwoEnds() {
        RecordingBackend tapped = tapped();
        tapped.aroundExtend(call -> {
            call.get();
            throw new LockBackendException("read timed out", null);
        });
        LockHandle lock = manager(tapped, b -> { }).acquire(fixed(Duration.ofSeconds(20)));
        assertThatThrownBy(() -> lock.extend(Duration.ofMillis(300))).isInstanceOf(LockBackendException.class)
                .hasMessageContaining("outcome is unknown");
        await("the holder's estimate to end with the shorter term", Duration.ofSeconds(10), () -> !lock.isHeld());
        assertThat(manager().tryAcquire(key)).as("the store let the shorter term go").isPresent().get()
                .satisfies(LockHandle::close);
        assertThatThrownBy(lock::close).isInstanceOf(LockLostException.class);
    }

    /**
     * The next extension settles an unknown one first (the same owner and lease again, a no-op where it had landed), so
     * the store and the holder agree on the owner again; the release then frees the key with one call.
     */
    @Test
    void theNextExtensionSettlesAnUnknownOneAndTheReleaseNeedsOneCall() {
        RecordingBackend tapped = tapped();
        boolean[] failing = {true};
        tapped.aroundExtend(call -> {
            RenewalResult answer = call.get();
            if (failing[0]) {
                throw new LockBackendException("read timed out", null);
            }
            return answer;
        });
        LockHandle lock = manager(tapped, b -> { }).acquire(fixed(Duration.ofSeconds(20)));
        assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(30))).isInstanceOf(LockBackendException.class);
        String unsure = tapped.sentExtensions.get(0).nextOwner();
        failing[0] = false;
        int before = tapped.sentExtensions.size();
        lock.extend(Duration.ofSeconds(40));
        List<RecordingBackend.SentExtension> settling = tapped.sentExtensions.subList(before, tapped.sentExtensions.size());
        assertThat(settling).extracting(RecordingBackend.SentExtension::nextOwner).as("the unknown term again, then a new one")
                .containsExactly(unsure, settling.get(1).nextOwner());
        assertThat(settling.get(1).owner()).as("the new term's earlier owner").isEqualTo(unsure);
        lock.close();
        assertThat(tapped.releases).as("release calls").hasValue(1);
        assertFree(manager(), key, "the key is free");
    }

    @Test
    void anExtensionKeepsTheAcquisitionsLockAtLeastForUnlessItGivesItsOwn() {
        RecordingBackend tapped = tapped();
        LockManager jvm = manager(tapped, b -> { });
        LockHandle kept = jvm.acquire(LockRequest.builder(key).leaseTime(Duration.ofSeconds(10))
                .lockAtLeastFor(Duration.ofSeconds(5)).waitTime(Duration.ZERO).build());
        kept.extend(Duration.ofSeconds(10));
        kept.close();
        assertThat(tapped.sentShortenings).as("a release inside the acquisition's lockAtLeastFor shortens").hasSize(1);
        assertThat(manager().tryAcquire(key)).as("the key right after the release").isEmpty();

        String other = key + ":dropped";
        LockHandle dropped = jvm.acquire(LockRequest.builder(other).leaseTime(Duration.ofSeconds(10))
                .lockAtLeastFor(Duration.ofSeconds(5)).waitTime(Duration.ZERO).build());
        dropped.extend(Duration.ofSeconds(10), Duration.ZERO);
        dropped.close();
        assertThat(tapped.sentShortenings).as("an extension without lockAtLeastFor: the release frees at once").hasSize(1);
        assertFree(manager(), other, "the key right after the release");
    }

    @Test
    void aStoreThatCannotExtendRefusesAndTheLeaseStaysAsItWas() {
        RecordingBackend tapped = tapped();
        // A store that cannot rewrite a lease's owner offers no LeaseExtension.
        tapped.alterCapabilities(declared -> declared.withLocalHandOff(null).withLeaseExtension(null));
        LockHandle lock = manager(tapped, b -> { }).acquire(fixed(Duration.ofSeconds(10)));
        assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(30))).isInstanceOf(UnsupportedOperationException.class)
                .hasMessageContaining("LeaseExtension");
        assertThat(tapped.sentExtensions).as("extensions sent").isEmpty();
        assertThat(lock.isHeld()).isTrue();
        assertThat(manager().tryAcquire(key)).isEmpty();
        lock.close();
        assertThat(tapped.releases).as("release calls: the earlier term's only").hasValue(1);
        assertFree(manager(), key, "the release freed the key");
    }

    @Test
    void invalidTermsAreRefusedBeforeTheStore() {
        RecordingBackend tapped = tapped();
        try (LockHandle lock = manager(tapped, b -> { }).acquire(fixed(Duration.ofSeconds(10)))) {
            assertThatThrownBy(() -> lock.extend(Duration.ofMillis(1))).isInstanceOf(IllegalArgumentException.class);
            assertThatThrownBy(() -> lock.extend(Duration.ofSeconds(1), Duration.ofSeconds(2)))
                    .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("lockAtLeastFor");
            assertThat(tapped.sentExtensions).isEmpty();
        }
    }

    /**
     * The manager closes (grace period zero) while an extension's command has landed and its reply is on the way: the
     * shutdown frees whichever term the store holds, at once, and the late answer revives nothing.
     */
    @Test
    void aShutdownWhileAnExtensionIsInFlightFreesTheNewTermAndTheAnswerRevivesNothing() throws Exception {
        RecordingBackend tapped = tapped();
        CountDownLatch landed = new CountDownLatch(1);
        CountDownLatch mayAnswer = new CountDownLatch(1);
        tapped.aroundExtend(call -> {
            RenewalResult answer = call.get();
            landed.countDown();
            awaitQuietly(mayAnswer);
            return answer;
        });
        LockManager jvm = manager(tapped, b -> { });
        LockHandle lock = jvm.acquire(fixed(Duration.ofSeconds(20)));
        CompletableFuture<Throwable> extension = new CompletableFuture<>();
        start("extending", () -> {
            try {
                lock.extend(Duration.ofSeconds(30));
                extension.complete(null);
            } catch (Throwable t) {
                extension.complete(t);
            }
        });
        assertThat(landed.await(10, TimeUnit.SECONDS)).isTrue();
        jvm.close(Duration.ZERO);
        assertFree(manager(), key, "the key right after the shutdown freed the extended lease");
        mayAnswer.countDown();
        assertThat(extension.get(10, TimeUnit.SECONDS)).isInstanceOf(LockLostException.class).hasMessageContaining("closed");
        assertFree(manager(), key, "the key after the late answer");
    }

    private static void sleep(long millis) {
        try {
            Thread.sleep(millis);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /**
     * An extension asked for after a fixed lease ran out says so, and so does the release after it (was: "was lost
     * before release: ... ran out before it was extended", from both the extension and the release).
     */
    @Test
    void anExtensionOfARunOutLeaseAndTheReleaseAfterItSayWhatHappened() throws Exception {
        LockManager locks = manager();
        LockHandle held = locks.acquire(LockRequest.builder(key).leaseTime(Duration.ofMillis(60)).build());
        await("the fixed lease to run out", Duration.ofSeconds(10), () -> !held.isHeld());

        assertThatThrownBy(() -> held.extend(Duration.ofSeconds(1))).isInstanceOf(LockLostException.class)
                .hasMessage("Lock 'default' on key '" + key + "' is lost: the fixed lease of 60 ms had run out when an "
                        + "extension was asked for");
        assertThatThrownBy(held::close).isInstanceOf(LockLostException.class)
                .hasMessageContaining("is lost: the fixed lease of 60 ms had run out when an extension was asked for");
    }
}
