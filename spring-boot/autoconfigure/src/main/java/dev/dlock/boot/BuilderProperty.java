package dev.dlock.boot;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.function.Supplier;
import java.util.regex.Pattern;

/**
 * Hands one {@code dlock.*} value to the builder that owns its rule: when the builder refuses the
 * value, the start fails with the builder's reason told in the property's terms ("dlock.lease-time is
 * invalid: must be at least 30 ms"), so the rule lives in the builder alone and the user still learns
 * which setting to fix, not which builder method refused it.
 */
final class BuilderProperty {

    /** A builder's reason opens with its parameter's name ("leaseTime must ..."), which the user never wrote. */
    private static final Pattern BUILDER_PARAMETER = Pattern.compile("^[a-z][A-Za-z]*\\s+(?=must\\b)");

    private BuilderProperty() {
    }

    /** A duration as {@link Duration#toString()} writes it ({@code PT0.01S}), which builders' reasons quote. */
    private static final Pattern ISO_DURATION = Pattern.compile("\\bPT-?[0-9][0-9HMS.-]*");

    /** Runs {@code setter} (a builder call taking the value of {@code property}) and returns what it returns. */
    static <T> T set(String property, Supplier<T> setter) {
        try {
            return setter.get();
        } catch (IllegalArgumentException e) {
            String reason = BUILDER_PARAMETER.matcher(String.valueOf(e.getMessage())).replaceFirst("");
            throw DistributedLockStartupException.invalid(property,
                    ISO_DURATION.matcher(reason).replaceAll(iso -> asWritten(iso.group())), e);
        }
    }

    /** {@code 10ms}, {@code 5s}, {@code 2m}: a duration as a property would give it. */
    static String asWritten(Duration duration) {
        long millis = duration.toMillis();
        if (duration.toNanos() % 1_000_000 != 0) {
            return duration.toNanos() + "ns";
        }
        if (millis % 1000 != 0) {
            return millis + "ms";
        }
        long seconds = millis / 1000;
        return seconds % 60 != 0 || seconds == 0 ? seconds + "s" : seconds % 3600 != 0 ? seconds / 60 + "m" : seconds / 3600 + "h";
    }

    private static String asWritten(String iso) {
        try {
            return asWritten(Duration.parse(iso));
        } catch (DateTimeParseException e) {
            return iso;
        }
    }
}
