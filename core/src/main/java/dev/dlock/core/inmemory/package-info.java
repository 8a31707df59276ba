/** The in-memory store, for one JVM: tests and single-instance applications. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.core.inmemory;

import org.jspecify.annotations.NullMarked;
