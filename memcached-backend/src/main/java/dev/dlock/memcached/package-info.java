/** The memcached store: efficiency only, never for correctness. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.memcached;

import org.jspecify.annotations.NullMarked;
