package dev.dlock.boot;

import org.springframework.beans.factory.annotation.Qualifier;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Inherited;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks the {@code UnifiedJedis} bean dlock locks with. The starter uses an application's client only
 * when it carries this qualifier or is named {@value #BEAN_NAME}; any other {@code UnifiedJedis} bean
 * (a cache client, say) is left alone, and dlock builds its own client from its settings.
 */
@Target({ElementType.FIELD, ElementType.METHOD, ElementType.PARAMETER, ElementType.TYPE, ElementType.ANNOTATION_TYPE})
@Retention(RetentionPolicy.RUNTIME)
@Inherited
@Documented
@Qualifier
public @interface DlockRedisClient {

    /** The bean name that marks the client as dlock's just like the annotation does. */
    String BEAN_NAME = "dlockRedisClient";

    /** Matched against the bean name when the bean carries no {@code @DlockRedisClient}; keep the default. */
    String value() default BEAN_NAME;
}
