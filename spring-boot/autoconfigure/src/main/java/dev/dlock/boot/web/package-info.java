/** Web answers for locks not acquired (409 with Retry-After). Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.boot.web;

import org.jspecify.annotations.NullMarked;
