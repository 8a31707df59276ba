/** The {@code @DistributedLock} annotation and its attributes' types. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.annotation;

import org.jspecify.annotations.NullMarked;
