package dev.dlock.fencing;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the {@code long} field of a JPA entity that holds the last fencing token the row accepted;
 * {@link JpaFencing#fence} checks it in the database and sets it to the holder's token. The field must be
 * a persistent attribute (a column, BIGINT) of the entity, accessed by field.
 *
 * @deprecated use {@link dev.dlock.annotation.FencingToken}, one annotation for an entity's token column and a locked
 *             method's token parameter; {@link JpaFencing} reads both
 */
@Deprecated(since = "0.1.0")
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.FIELD)
public @interface FencingToken {
}
