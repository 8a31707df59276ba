/** Real Redis servers for tests, on free loopback ports. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.testkit.redis;

import org.jspecify.annotations.NullMarked;
