/** The JDBC store: PostgreSQL, MySQL, MariaDB and H2. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.jdbc;

import org.jspecify.annotations.NullMarked;
