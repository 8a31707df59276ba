package dev.dlock.aspect;

import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Parses the duration attributes of {@code @DistributedLock}: {@code "0"}, {@code "500ms"}, {@code "5s"}, {@code "2m"},
 * {@code "1h"}, {@code "1d"}, ISO-8601 {@code "PT5S"}.
 */
public final class LockDurations {

    private static final Pattern SIMPLE = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)?");

    private LockDurations() {
    }

    /**
     * Parses {@code text}; a bare number is milliseconds ({@code "0"} means "try once").
     *
     * @throws IllegalArgumentException naming the accepted forms when {@code text} matches none
     */
    public static Duration parse(String text) {
        String trimmed = text.trim();
        Matcher simple = SIMPLE.matcher(trimmed.toLowerCase(Locale.ROOT));
        if (simple.matches()) {
            long amount = Long.parseLong(simple.group(1));
            String unit = simple.group(2);
            if (unit == null || unit.equals("ms")) {
                return Duration.ofMillis(amount);
            }
            return switch (unit) {
                case "s" -> Duration.ofSeconds(amount);
                case "m" -> Duration.ofMinutes(amount);
                case "h" -> Duration.ofHours(amount);
                default -> Duration.ofDays(amount);
            };
        }
        try {
            Duration parsed = Duration.parse(trimmed);
            if (parsed.isNegative()) {
                throw new IllegalArgumentException("duration '" + text + "' is negative");
            }
            return parsed;
        } catch (DateTimeParseException e) {
            throw new IllegalArgumentException("'" + text + "' is not a duration; use \"0\", \"500ms\", \"5s\", \"2m\", \"1h\", "
                    + "\"1d\" or ISO-8601 like \"PT5S\"", e);
        }
    }
}
