package dev.dlock.annotation;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks where a fencing token goes: the parameter of a {@code @DistributedLock} method that receives its hold's token,
 * or the column of a JPA entity that keeps the last token its row accepted ({@code JpaFencing.fence}, in
 * {@code dlock-fencing}).
 *
 * <pre>{@code
 * @DistributedLock(key = "#account.id")
 * public void post(Account account, Entry entry, @FencingToken long token) {
 *     ledger.write(account, entry, token);   // the ledger refuses tokens lower than the last it saw
 * }
 *
 * service.post(account, entry, FencingToken.FROM_THE_LOCK);   // any value: the method gets the token
 * }</pre>
 *
 * <p>On a parameter: the method runs with the token of the lock it holds in place of what the caller passed, issued
 * with the acquisition in the same store call (as {@link DistributedLock#fencingToken()} asks). The parameter is a
 * {@code long} or {@code Long}; a method locking several {@link DistributedLock#keys() keys} declares it
 * {@code Map<String, Long>}, every locked key's token by key. Checked at startup: one such parameter per method, on a
 * method with {@code @DistributedLock}, with a store that issues fencing tokens. A call that runs without the lock
 * (its {@link DistributedLock#condition() condition} false, or a {@link DistributedLock#fallback() fallback}) gets
 * what the caller passed.
 *
 * <p>On a field: a {@code long} persistent attribute (a BIGINT column) of the entity, accessed by field.
 */
@Target({ElementType.PARAMETER, ElementType.FIELD})
@Retention(RetentionPolicy.RUNTIME)
@Documented
public @interface FencingToken {

    /** What a caller passes for a {@code @FencingToken} parameter, to say so: the method gets the lock's token instead. */
    long FROM_THE_LOCK = 0;
}
