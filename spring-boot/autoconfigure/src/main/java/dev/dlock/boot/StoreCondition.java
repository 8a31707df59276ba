package dev.dlock.boot;

import dev.dlock.boot.DistributedLockProperties.Store;
import org.springframework.boot.autoconfigure.condition.ConditionMessage;
import org.springframework.boot.autoconfigure.condition.ConditionOutcome;
import org.springframework.boot.autoconfigure.condition.SpringBootCondition;
import org.springframework.boot.context.properties.bind.BindResult;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.core.env.Environment;
import org.springframework.core.type.AnnotatedTypeMetadata;

import java.util.Arrays;

/**
 * The condition of {@link ConditionalOnLockStore}: the store chosen with {@code dlock.store}, bound the way the
 * properties bind it (so {@code in-memory}, {@code IN_MEMORY} ... all work), else the one whose module is on the
 * class path. A {@link SpringBootCondition}, so the conditions report says which store was chosen and why.
 */
class StoreCondition extends SpringBootCondition {

    static final String STORE = DistributedLockProperties.PREFIX + ".store";

    @Override
    public ConditionOutcome getMatchOutcome(ConditionContext context, AnnotatedTypeMetadata metadata) {
        Store wanted = metadata.getAnnotations().get(ConditionalOnLockStore.class).getEnum("value", Store.class);
        Choice choice = choose(context.getEnvironment(), context.getClassLoader());
        ConditionMessage message = ConditionMessage.forCondition(ConditionalOnLockStore.class, "(" + wanted.id() + ")")
                .because("the store is " + choice.store().id() + ": " + choice.reason());
        return new ConditionOutcome(choice.store() == wanted, message);
    }

    /**
     * The store {@code dlock.store} names; when it is not set, the one whose store module (and client) is on the
     * class path, in the order of {@link Store}'s constants — Redis, then ZooKeeper, then JDBC, then memcached — so
     * that a store starter alone is enough; Redis when there is none.
     */
    static Store chosen(Environment environment, ClassLoader classLoader) {
        return choose(environment, classLoader).store();
    }

    private static Choice choose(Environment environment, ClassLoader classLoader) {
        BindResult<Store> named = Binder.get(environment).bind(STORE, Store.class);
        if (named.isBound()) {
            return new Choice(named.get(), STORE + "=" + named.get().id());
        }
        return Arrays.stream(Store.values()).filter(store -> store.module().isPresent(classLoader)).findFirst()
                .map(store -> new Choice(store, STORE + " is not set and " + store.module().artifact()
                        + " is on the class path (" + String.join(", ", store.module().markers()) + ")"))
                .orElseGet(() -> new Choice(Store.REDIS, STORE + " is not set and no store module is on the class path ("
                        + Store.REDIS.id() + " is the default)"));
    }

    /** A store and why it is the one. */
    private record Choice(Store store, String reason) {
    }
}
