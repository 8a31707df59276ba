/** ShedLock's {@code LockProvider} backed by dlock. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.shedlock;

import org.jspecify.annotations.NullMarked;
