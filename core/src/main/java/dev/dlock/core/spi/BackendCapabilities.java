package dev.dlock.core.spi;

import dev.dlock.core.LockKind;
import java.util.Collections;
import java.util.EnumSet;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;
import java.util.function.Consumer;

/**
 * Everything a store offers beyond the methods every {@link LockBackend} has, in one value the engine asks for once,
 * when a manager is built ({@link LockBackend#capabilities()}). Start from {@link #DEFAULT} and say only what differs:
 * {@code DEFAULT.withModes(EnumSet.allOf(LockKind.Mode.class)).withReleaseNotices(notices)}.
 *
 * <p>An ability with behaviour of its own is declared by giving the object that does it ({@link RenewalGrouping},
 * {@link ReleaseNotices}, {@link SessionLeases}, {@link HolderInspection}, {@link LocalHandOff},
 * {@link TokensOnRequest}, {@link LeaseExtension}); absent, the store does not offer it. Two plain facts complete it: the kinds of lock the
 * store takes, and whether its fencing tokens mean anything. This is the only way a store says what it can do: no
 * flag can claim an ability the store has no code for, and no method of the SPI exists only to throw.
 */
public final class BackendCapabilities {

    /** Exclusive locks only, fencing tokens issued with every acquisition, nothing optional: a store's starting point. */
    public static final BackendCapabilities DEFAULT = new BackendCapabilities(new Declared());

    /** What this value declares; never changed once made (a change is made to a copy). */
    private final Declared declared;

    private BackendCapabilities(Declared declared) {
        Objects.requireNonNull(declared.modes, "modes");
        if (!declared.modes.contains(LockKind.Mode.EXCLUSIVE)) {
            throw new IllegalArgumentException("every store takes EXCLUSIVE locks; modes " + declared.modes + " leave it out");
        }
        declared.modes = Collections.unmodifiableSet(EnumSet.copyOf(declared.modes));
        this.declared = declared;
    }

    /** What a store declares. */
    private static final class Declared implements Cloneable {
        Set<LockKind.Mode> modes = EnumSet.of(LockKind.Mode.EXCLUSIVE);
        boolean fencing = true;
        RenewalGrouping renewalGrouping;
        ReleaseNotices releaseNotices;
        SessionLeases sessionLeases;
        HolderInspection holderInspection;
        LocalHandOff localHandOff;
        TokensOnRequest tokensOnRequest;
        LeaseExtension leaseExtension;

        Declared copy() {
            try {
                return (Declared) clone();
            } catch (CloneNotSupportedException e) {
                throw new AssertionError(e);
            }
        }
    }

    /** These capabilities, with {@code change} made to a copy of what they declare. */
    private BackendCapabilities with(Consumer<Declared> change) {
        Declared copy = declared.copy();
        change.accept(copy);
        return new BackendCapabilities(copy);
    }

    /**
     * The kinds of lock the store takes, in declaration order; always includes {@link LockKind.Mode#EXCLUSIVE}. The
     * engine refuses a request of another kind before it reaches the store, the aspect refuses it at startup.
     */
    public Set<LockKind.Mode> modes() {
        return declared.modes;
    }

    /** Whether the store takes locks of {@code kind}. */
    public boolean supports(LockKind kind) {
        return declared.modes.contains(kind.mode());
    }

    /**
     * Whether the store issues fencing tokens; when false the tokens it returns mean nothing, and a handle refuses to
     * hand one out ({@code LockHandle.fencingToken()} throws) instead of a number that protects no resource.
     */
    public boolean fencing() {
        return declared.fencing;
    }

    /** Which node serves a key, and the largest renew batch; empty: one node, batches of the manager's size. */
    public Optional<RenewalGrouping> renewalGrouping() {
        return Optional.ofNullable(declared.renewalGrouping);
    }

    /** Release notices pushed to waiters; empty: waiters ask the store again when the holder's lease may end. */
    public Optional<ReleaseNotices> releaseNotices() {
        return Optional.ofNullable(declared.releaseNotices);
    }

    /** Leases kept alive by the store's session, and reports of lost ones; empty: leases expire unless renewed. */
    public Optional<SessionLeases> sessionLeases() {
        return Optional.ofNullable(declared.sessionLeases);
    }

    /** Who holds a key in the store, and an operator's forced release; empty: the engine knows only its own holds. */
    public Optional<HolderInspection> holderInspection() {
        return Optional.ofNullable(declared.holderInspection);
    }

    /** An exclusive lease passed straight to the next holder in the JVM, in one call; empty: a release, then an acquisition. */
    public Optional<LocalHandOff> localHandOff() {
        return Optional.ofNullable(declared.localHandOff);
    }

    /**
     * A fencing token issued when the holder first asks; required of a store whose acquisitions or hand-offs answer
     * {@link AcquireResult.Acquired#TOKEN_ON_REQUEST}. Empty: every token comes with its acquisition.
     */
    public Optional<TokensOnRequest> tokensOnRequest() {
        return Optional.ofNullable(declared.tokensOnRequest);
    }

    /** A held fixed lease given a new term by its holder, in one store call; empty: extensions are refused. */
    public Optional<LeaseExtension> leaseExtension() {
        return Optional.ofNullable(declared.leaseExtension);
    }

    /** These capabilities with {@code modes} as the kinds of lock the store takes. */
    public BackendCapabilities withModes(Set<LockKind.Mode> modes) {
        return with(declared -> declared.modes = modes);
    }

    /** These capabilities with {@link #fencing()} set to {@code fencing}. */
    public BackendCapabilities withFencing(boolean fencing) {
        return with(declared -> declared.fencing = fencing);
    }

    /** These capabilities with {@code grouping} as the store's {@link #renewalGrouping()}; null for none. */
    public BackendCapabilities withRenewalGrouping(RenewalGrouping grouping) {
        return with(declared -> declared.renewalGrouping = grouping);
    }

    /** These capabilities with {@code notices} as the store's {@link #releaseNotices()}; null for none. */
    public BackendCapabilities withReleaseNotices(ReleaseNotices notices) {
        return with(declared -> declared.releaseNotices = notices);
    }

    /** These capabilities with {@code leases} as the store's {@link #sessionLeases()}; null for none. */
    public BackendCapabilities withSessionLeases(SessionLeases leases) {
        return with(declared -> declared.sessionLeases = leases);
    }

    /** These capabilities with {@code inspection} as the store's {@link #holderInspection()}; null for none. */
    public BackendCapabilities withHolderInspection(HolderInspection inspection) {
        return with(declared -> declared.holderInspection = inspection);
    }

    /** These capabilities with {@code handOff} as the store's {@link #localHandOff()}; null for none. */
    public BackendCapabilities withLocalHandOff(LocalHandOff handOff) {
        return with(declared -> declared.localHandOff = handOff);
    }

    /** These capabilities with {@code issuance} as the store's {@link #tokensOnRequest()}; null for none. */
    public BackendCapabilities withTokensOnRequest(TokensOnRequest issuance) {
        return with(declared -> declared.tokensOnRequest = issuance);
    }

    /** These capabilities with {@code extension} as the store's {@link #leaseExtension()}; null for none. */
    public BackendCapabilities withLeaseExtension(LeaseExtension extension) {
        return with(declared -> declared.leaseExtension = extension);
    }

    /**
     * For a store that takes exclusive locks only: throws the {@link UnsupportedOperationException} that names
     * {@code store} and {@code kind} unless {@code kind} is exclusive. The engine never sends such a request; this
     * guards direct callers.
     */
    public static void requireExclusive(LockBackend store, LockKind kind) {
        if (kind.mode() != LockKind.Mode.EXCLUSIVE) {
            throw new UnsupportedOperationException(store.getClass().getSimpleName() + " cannot take " + kind
                    + " locks; it supports " + store.capabilities().modes());
        }
    }

    @Override
    public String toString() {
        return "BackendCapabilities[modes=" + declared.modes + ", fencing=" + declared.fencing + ", renewalGrouping="
                + renewalGrouping().isPresent() + ", releaseNotices=" + releaseNotices().isPresent() + ", sessionLeases="
                + sessionLeases().isPresent() + ", holderInspection=" + holderInspection().isPresent() + ", localHandOff="
                + localHandOff().isPresent() + ", tokensOnRequest=" + tokensOnRequest().isPresent() + ", leaseExtension="
                + leaseExtension().isPresent() + "]";
    }
}
