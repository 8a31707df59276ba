/** The {@code @DistributedLock} aspect for Spring: its support, SpEL, {@code LockContext}. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.aspect;

import org.jspecify.annotations.NullMarked;
