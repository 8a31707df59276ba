package dev.dlock.boot.actuate;

import org.springframework.aot.hint.BindingReflectionHintsRegistrar;
import org.springframework.aot.hint.RuntimeHints;
import org.springframework.aot.hint.RuntimeHintsRegistrar;
import org.springframework.util.ClassUtils;

/**
 * The reflection Jackson needs to write the {@code dlock} endpoint's answers in a native image. Boot hints what an
 * operation method declares it returns; the web extension returns {@code WebEndpointResponse<Object>}, so its bodies
 * ({@link DistributedLockEndpoint.LockHoldersDescriptor} and what it holds) are registered here, all four for binding.
 * Listed in {@code META-INF/spring/aot.factories}.
 */
public class DistributedLockEndpointRuntimeHints implements RuntimeHintsRegistrar {

    private final BindingReflectionHintsRegistrar binding = new BindingReflectionHintsRegistrar();

    /** Registers the hints when Actuator is on the class path. */
    @Override
    public void registerHints(RuntimeHints hints, ClassLoader classLoader) {
        if (!ClassUtils.isPresent("org.springframework.boot.actuate.endpoint.annotation.Endpoint", classLoader)) {
            return;
        }
        binding.registerReflectionHints(hints.reflection(),
                DistributedLockEndpoint.HeldLocksDescriptor.class, DistributedLockEndpoint.HeldLockDescriptor.class,
                DistributedLockEndpoint.LockHoldersDescriptor.class, DistributedLockEndpoint.LockHolderDescriptor.class);
    }
}
