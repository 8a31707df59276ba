/** The {@code dlock} Actuator endpoint and health. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.boot.actuate;

import org.jspecify.annotations.NullMarked;
