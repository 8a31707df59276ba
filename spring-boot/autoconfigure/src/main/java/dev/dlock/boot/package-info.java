/** Spring Boot auto-configuration of dlock: properties, stores, the aspect. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.boot;

import org.jspecify.annotations.NullMarked;
