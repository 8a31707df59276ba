package dev.dlock.boot;

import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.type.AnnotatedTypeMetadata;

import java.util.List;

/** Matches when {@code dlock.redis.redlock.nodes} lists at least one node (as a YAML list or comma-separated). */
class RedlockCondition implements Condition {

    static final String NODES = RedisStoreProperties.PREFIX + ".redlock.nodes";

    @Override
    public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
        return isRedlock(Binder.get(context.getEnvironment()));
    }

    static boolean isRedlock(Binder binder) {
        return !binder.bind(NODES, Bindable.listOf(String.class)).orElse(List.of()).isEmpty();
    }

    /** The opposite: one Redis deployment (standalone, Sentinel or Cluster). */
    static class Not implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return !isRedlock(Binder.get(context.getEnvironment()));
        }
    }
}
