/** dlock's test kit: the store contract suites and their helpers. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.testkit;

import org.jspecify.annotations.NullMarked;
