package dev.dlock.boot;

import java.util.function.Supplier;

/**
 * Hands one {@code dlock.*} value to the builder that owns its rule: when the builder refuses the
 * value, the start fails with the builder's reason prefixed by the property's name, so the rule
 * lives in the builder alone and the user still learns which setting to fix.
 */
final class BuilderProperty {

    private BuilderProperty() {
    }

    /** Runs {@code setter} (a builder call taking the value of {@code property}) and returns what it returns. */
    static <T> T set(String property, Supplier<T> setter) {
        try {
            return setter.get();
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(property + " is invalid: " + e.getMessage(), e);
        }
    }
}
