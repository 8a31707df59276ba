package dev.dlock.boot.web;

import dev.dlock.core.LockNotAcquiredException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ProblemDetail;

import java.net.URI;
import java.time.Duration;
import java.util.OptionalLong;

/**
 * The answer a web client gets for a lock that was not acquired: {@code 409 Conflict} as an RFC 9457 problem detail
 * naming the lock ({@code lock}, {@code reason}; the key only when configured, as keys may carry ids or personal data),
 * and a {@code Retry-After} after a wait that timed out. Shared by the Spring MVC and WebFlux handlers.
 */
public final class LockNotAcquiredProblems {

    /** The problem detail's property naming the lock's static name. */
    public static final String LOCK = "lock";
    /** The problem detail's property with why the lock was not acquired ({@code TIMEOUT}, {@code ABORTED}, {@code INTERRUPTED}). */
    public static final String REASON = "reason";
    /** The problem detail's property with the lock key, present only when configured. */
    public static final String KEY = "key";

    /** How deep a cause chain is searched for the exception. */
    private static final int MAX_CAUSES = 16;

    private final boolean includeKey;

    /** Answers with the lock key in the problem detail when {@code includeKey}. */
    public LockNotAcquiredProblems(boolean includeKey) {
        this.includeKey = includeKey;
    }

    /** The {@link LockNotAcquiredException} that {@code failure} is or was caused by, or null. */
    public static LockNotAcquiredException find(Throwable failure) {
        Throwable each = failure;
        for (int depth = 0; each != null && depth < MAX_CAUSES; depth++, each = each.getCause()) {
            if (each instanceof LockNotAcquiredException notAcquired) {
                return notAcquired;
            }
        }
        return null;
    }

    /** The problem detail for {@code failure}, answered to a request for {@code path}. */
    public ProblemDetail problem(LockNotAcquiredException failure, String path) {
        ProblemDetail problem = ProblemDetail.forStatusAndDetail(HttpStatus.CONFLICT, detail(failure));
        problem.setInstance(URI.create(path));
        problem.setProperty(LOCK, failure.lockName());
        problem.setProperty(REASON, failure.reason().name());
        if (includeKey) {
            problem.setProperty(KEY, failure.key());
        }
        return problem;
    }

    /**
     * The {@code Retry-After} seconds after a wait that timed out: the wait time the call allowed (rounded up to whole
     * seconds), during which the holder kept the key. None when the call only tried once (wait time 0) or its wait time
     * is not known, and none after an abort condition (a retry would meet it again) or an interrupt.
     */
    public OptionalLong retryAfterSeconds(LockNotAcquiredException failure) {
        Duration waitTime = failure.waitTime();
        if (failure.reason() != LockNotAcquiredException.Reason.TIMEOUT || waitTime == null || waitTime.isZero()) {
            return OptionalLong.empty();
        }
        long millis = waitTime.toMillis();
        return OptionalLong.of(Math.max(1, millis / 1000 + (millis % 1000 == 0 ? 0 : 1)));
    }

    private static String detail(LockNotAcquiredException failure) {
        String lock = "Lock '" + failure.lockName() + "' ";
        return switch (failure.reason()) {
            case TIMEOUT -> lock + "is held by another caller (still busy after waiting " + failure.waited().toMillis()
                    + " ms): try again later";
            case ABORTED -> lock + "was not acquired: the wait was abandoned, its abort condition became true";
            case INTERRUPTED -> lock + "was not acquired: the wait was interrupted";
        };
    }
}
