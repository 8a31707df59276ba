package dev.dlock.core;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The owner tokens an operator's forced release removed in this JVM, so that the holder's lost-lease report can say
 * why. JVM-wide, not per manager: the operator may order the release through another manager than the holder's (an
 * endpoint over a second manager, or a test's second "instance"). Bounded: a token whose holder lives in another JVM is
 * never looked up here, and only the most recent {@value #MAX_REMEMBERED} are kept.
 */
final class ForcedReleases {

    /** The most owner tokens remembered; older ones fall out, and their loss is reported with the store's plain reason. */
    static final int MAX_REMEMBERED = 1024;

    /** Why a lease removed by a forced release is lost. */
    static final String REASON = "taken by a forced release (an operator freed the key in the store)";

    private static final Map<String, Boolean> removed = new LinkedHashMap<>() {
        @Override
        protected boolean removeEldestEntry(Map.Entry<String, Boolean> eldest) {
            return size() > MAX_REMEMBERED;
        }
    };

    private ForcedReleases() {
    }

    /** Remembers that a forced release removed {@code owner}. */
    static void removed(String owner) {
        synchronized (removed) {
            removed.put(owner, Boolean.TRUE);
        }
    }

    /** {@link #REASON} when a forced release of this JVM removed {@code owner} (forgetting it), else {@code storeReason}. */
    static String reason(String owner, String storeReason) {
        synchronized (removed) {
            if (removed.isEmpty()) {
                return storeReason;
            }
            return removed.remove(owner) != null ? REASON : storeReason;
        }
    }
}
