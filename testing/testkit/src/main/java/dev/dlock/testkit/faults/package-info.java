/** The fault suite: real faults against real stores. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.testkit.faults;

import org.jspecify.annotations.NullMarked;
