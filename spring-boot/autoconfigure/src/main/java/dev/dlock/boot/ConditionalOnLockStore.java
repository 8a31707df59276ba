package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import org.springframework.context.annotation.Conditional;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Matches when {@code value} is the lock store: the one {@code dlock.store} names, else the one whose module is on the
 * class path ({@link StoreCondition}). Its outcome, with the reason, is in Boot's conditions report ({@code --debug}).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target({ElementType.TYPE, ElementType.METHOD})
@Conditional(StoreCondition.class)
@interface ConditionalOnLockStore {

    /** The store the annotated configuration or bean is for. */
    Store value();
}
