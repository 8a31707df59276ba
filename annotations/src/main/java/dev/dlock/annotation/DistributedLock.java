package dev.dlock.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Runs the annotated method while holding a distributed lock on a key computed from its arguments.
 *
 * <pre>{@code
 * @DistributedLock(key = "#order.id", waitTime = "2s")
 * public void ship(Order order) { ... }
 * }</pre>
 *
 * <p>Expressions ({@link #key()}, {@link #keys()}, {@link #condition()}, {@link #abortIf()}) are
 * Spring Expression Language over the method's arguments: {@code #paramName} (needs the
 * {@code -parameters} compiler flag), {@code #p0}/{@code #a0}, {@code #root.methodName},
 * {@code #root.targetClass}, and {@code @beanName} for Spring beans. The lock store key is
 * {@code <name>:<resolved key>}, stored under the backend's prefix ({@code dlock:} by default).
 */
@Target(ElementType.METHOD)
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface DistributedLock {

    /**
     * SpEL giving the lock key, for example {@code "#order.id"} or {@code "#p0 + ':' + #p1"}; a
     * non-String result is converted with {@code String.valueOf}. A null or blank result fails the
     * call. Exactly one of {@code key} and {@link #keys()} must be set.
     */
    String key() default "";

    /**
     * Several SpEL keys locked together, all or nothing: acquired in sorted order (so two methods
     * taking the same keys in opposite orders cannot deadlock) and released in reverse. An
     * expression yielding a collection or array contributes one key per element.
     */
    String[] keys() default {};

    /** The lock's static name, also the metrics tag; default {@code SimpleClassName.methodName}. Never put ids here. */
    String name() default "";

    /**
     * How long to wait for a held lock: {@code ""} uses the configured default, {@code "0"} tries
     * once, otherwise {@code "500ms"}, {@code "5s"}, {@code "2m"}, {@code "1h"}, ISO-8601
     * {@code "PT5S"}, or a {@code ${...}} placeholder resolved from the Spring environment.
     */
    String waitTime() default "";

    /**
     * The lease: {@code ""} is a watchdog-managed lease, renewed while the method runs; otherwise
     * a fixed lease (same syntax as {@link #waitTime()}) that is never renewed. At least 30 ms, like every
     * lease ({@code LockRequest.MIN_LEASE_TIME}).
     */
    String leaseTime() default "";

    /**
     * The shortest hold, for scheduled jobs: when the method returns sooner, the key stays taken until
     * this long after it was acquired (the release only shortens the lease), so a node whose schedule
     * fires a moment later skips the run instead of repeating it. Same syntax as {@link #waitTime()};
     * {@code ""} for none; with a fixed {@link #leaseTime()} (ShedLock's {@code lockAtMostFor}) it
     * must not exceed it. Needs a store whose leases expire on their own.
     */
    String lockAtLeastFor() default "";

    /**
     * Which side of the key's read/write lock to take: {@link LockMode#READ} (shared among readers) or
     * {@link LockMode#WRITE} (alone); the default {@link LockMode#EXCLUSIVE} is a plain lock, separate from
     * the read/write lock of the same name and key — use WRITE, not the default, beside READ.
     */
    LockMode mode() default LockMode.EXCLUSIVE;

    /**
     * A semaphore: up to this many holders of the key at once, each with its own lease (a dead holder's
     * permit returns when its lease ends). Every method locking the same name must give the same number;
     * cannot be combined with {@link #mode()} READ/WRITE or {@link #fair()}.
     */
    int permits() default 1;

    /**
     * First come, first served across JVMs: waiters queue in the store and take the key in the order they
     * asked for it. A waiter that stops asking (its JVM died) loses its place after a bounded time; a live
     * waiter never does. Costs a store call per waiting thread every second or so. Exclusive locks only.
     */
    boolean fair() default false;

    /**
     * Whether the method reads its fencing token ({@code LockContext.current().fencingToken()}, a fencing guard): the
     * token is then issued with the acquisition, in the same store call, instead of one more round trip to Redis at the
     * first read. The token is the same either way, and without this a method still gets one; the aspect also turns it
     * on by itself for a method once a call of it has read its token.
     */
    boolean fencingToken() default false;

    /** SpEL; when it evaluates to false the method runs without a lock. Empty means always lock. */
    String condition() default "";

    /**
     * SpEL checked before waiting, at every wake-up while waiting (at least every abort-check
     * interval, 100 ms by default), and once right after acquiring; when true the attempt is given
     * up, a lock already taken is released, and {@link #onFailure()} applies.
     */
    String abortIf() default "";

    /**
     * What happens to the method's work when its lease is lost while it runs (the store no longer holds the key for it:
     * an operator's forced release, a renewal that found the key gone or could not reach the store before the lease ran
     * out, the application's shutdown): {@link WhenLeaseLost#STOP} interrupts a blocking method's thread and cancels an
     * asynchronous result; the release reports the loss either way.
     */
    WhenLeaseLost whenLeaseLost() default WhenLeaseLost.DEFAULT;

    /** What happens when the lock is not acquired. */
    OnFailure onFailure() default OnFailure.THROW;

    /**
     * With {@link OnFailure#FALLBACK}: the name of a method on the same bean with the same
     * parameters, optionally followed by a {@code LockNotAcquiredException} parameter, returning a
     * type assignable to this method's return type.
     */
    String fallback() default "";
}
