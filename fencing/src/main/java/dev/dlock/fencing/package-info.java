/** Fencing guards: resources that refuse a stale holder's token. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.fencing;

import org.jspecify.annotations.NullMarked;
