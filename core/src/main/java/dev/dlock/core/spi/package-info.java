/** The store SPI: {@code LockBackend} and the optional abilities a store declares. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.core.spi;

import org.jspecify.annotations.NullMarked;
