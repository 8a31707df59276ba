/** The Redis store: standalone, Sentinel, Cluster and Redlock. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.redis;

import org.jspecify.annotations.NullMarked;
