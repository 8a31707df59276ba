/** Micrometer Observations of lock acquisitions and holds. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.boot.observation;

import org.jspecify.annotations.NullMarked;
