package dev.dlock.redis;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

import dev.dlock.core.LockKind;
import dev.dlock.core.spi.HolderInspection;
import dev.dlock.core.spi.StoredHolder;

/**
 * Who holds a key under Redlock, and an operator's forced release, on top of each master's
 * {@link RedisHolderInspection}. A holder is an owner a quorum of masters name, and its remaining lease is the time
 * until fewer than a quorum still keep it. A forced release runs on every master (each deletes the key and publishes
 * the notice) and needs a quorum of answers, so the removed holder can no longer
 * keep a quorum: its next renewal or its release reports the lease lost. It answers every owner removed on any master,
 * each with the longest lease it had there.
 */
final class RedlockHolderInspection implements HolderInspection {

    private final RedlockBackend redlock;

    RedlockHolderInspection(RedlockBackend redlock) {
        this.redlock = redlock;
    }

    @Override
    public List<StoredHolder> holders(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        Map<String, List<Long>> leases = byOwner(redlock.onEveryMaster("holders of key '" + key + "'",
                master -> master.capabilities().holderInspection().orElseThrow().holders(kind, key)));
        int quorum = redlock.quorum();
        List<StoredHolder> holders = new ArrayList<>();
        leases.forEach((owner, remaining) -> {
            if (remaining.size() >= quorum) {
                remaining.sort(Comparator.reverseOrder());
                holders.add(new StoredHolder(owner, remaining.get(quorum - 1)));
            }
        });
        return List.copyOf(holders);
    }

    @Override
    public List<StoredHolder> forceRelease(LockKind kind, String key) {
        Objects.requireNonNull(kind, "kind");
        Map<String, List<Long>> leases = byOwner(redlock.onEveryMaster("forceRelease of key '" + key + "'",
                master -> master.capabilities().holderInspection().orElseThrow().forceRelease(kind, key)));
        List<StoredHolder> removed = new ArrayList<>();
        leases.forEach((owner, remaining) -> removed.add(new StoredHolder(owner, remaining.stream().max(Long::compare).orElseThrow())));
        return List.copyOf(removed);
    }

    /** Each owner the masters name, in the order first named, with the remaining lease each master gives it. */
    private static Map<String, List<Long>> byOwner(List<List<StoredHolder>> perMaster) {
        Map<String, List<Long>> leases = new LinkedHashMap<>();
        for (List<StoredHolder> holders : perMaster) {
            for (StoredHolder holder : holders) {
                leases.computeIfAbsent(holder.owner(), owner -> new ArrayList<>()).add(holder.remainingTtlMillis());
            }
        }
        return leases;
    }
}
