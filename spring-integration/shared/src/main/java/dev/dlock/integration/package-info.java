/** Spring Integration's {@code LockRegistry} backed by dlock. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.integration;

import org.jspecify.annotations.NullMarked;
