/** The lock engine: {@code LockManager}, handles, requests, listeners and the exceptions. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.core;

import org.jspecify.annotations.NullMarked;
