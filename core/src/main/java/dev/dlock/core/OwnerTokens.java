package dev.dlock.core;

import java.net.InetAddress;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Issues owner tokens. A token is unique (a random 128-bit id drawn once per manager plus a sequence number, so no
 * SecureRandom call and lock per acquire) and says who took the key, so that any JVM reading the store can tell an
 * operator: {@code instance/holder/takenAt/id:sequence}. The instance and holder parts are printable ASCII without
 * '/', at most {@value #MAX_PART} characters each (stores keep owners in ASCII columns of 255 characters); takenAt is
 * the wall-clock millisecond in base 36, read by people only, never compared across machines.
 */
final class OwnerTokens {

    /** The longest instance or holder part of a token. */
    static final int MAX_PART = 48;

    private final String instance;
    private final String id = UUID.randomUUID().toString();
    private final AtomicLong sequence = new AtomicLong();
    /**
     * Per thread, the last holder name seen and its token part: a thread asks under the same name (the same String) time
     * after time, and cleaning it showed in the profile of every acquisition.
     */
    private static final ThreadLocal<String[]> LAST_PART = ThreadLocal.withInitial(() -> new String[2]);

    OwnerTokens(String instance) {
        this.instance = part(instance);
    }

    /** A token for an acquisition by the calling thread. */
    String next() {
        return next(holderName(Thread.currentThread()));
    }

    /** A token for an acquisition by {@code holder} (a thread's or an asynchronous flow's name). */
    String next(String holder) {
        return instance + '/' + cachedPart(holder) + '/' + Long.toString(System.currentTimeMillis(), 36) + '/' + id + ':'
                + Long.toString(sequence.incrementAndGet(), 36);
    }

    /** {@link #part} of {@code holder}, remembered per thread for the name it asked with last. */
    private static String cachedPart(String holder) {
        String[] last = LAST_PART.get();
        if (last[0] != holder) {
            last[1] = part(holder);
            last[0] = holder;
        }
        return last[1];
    }

    /**
     * A fresh token for the same instance and holder as {@code owner} (one of this manager's tokens): the store value
     * of a lease whose term changes without a new holder, such as a release that keeps the key until
     * {@code lockAtLeastFor} ends, or an extension. Holders listed from the store still name who took the key.
     */
    String successor(String owner) {
        int instanceEnd = owner.indexOf('/');
        int holderEnd = instanceEnd < 0 ? -1 : owner.indexOf('/', instanceEnd + 1);
        return holderEnd < 0 ? next("_") : next(owner.substring(instanceEnd + 1, holderEnd));
    }

    /** The name a holder thread goes by: its name, or its id when it has none (an unnamed virtual thread). */
    @SuppressWarnings("deprecation") // threadId() is Java 19+; getId() is the same number
    static String holderName(Thread thread) {
        String name = thread.getName();
        return name.isEmpty() ? "#" + thread.getId() : name;
    }

    /** This JVM's default instance id: the host name and the process id. */
    static String defaultInstance() {
        String host;
        try {
            host = InetAddress.getLocalHost().getHostName();
        } catch (Exception | Error e) {
            host = "localhost";
        }
        return host + "-" + ProcessHandle.current().pid();
    }

    /** {@code text} as a token part: printable ASCII but '/', others replaced by '_', cut to {@value #MAX_PART}. */
    static String part(String text) {
        StringBuilder out = new StringBuilder(Math.min(text.length(), MAX_PART));
        for (int i = 0; i < text.length() && out.length() < MAX_PART; i++) {
            char c = text.charAt(i);
            out.append(c > ' ' && c < 127 && c != '/' ? c : '_');
        }
        return out.isEmpty() ? "_" : out.toString();
    }
}
