/** Micrometer meters of dlock's locks. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.boot.metrics;

import org.jspecify.annotations.NullMarked;
