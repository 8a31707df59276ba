/** The ZooKeeper store, through Curator. Not null unless marked {@code @Nullable} (JSpecify). */
@NullMarked
package dev.dlock.zookeeper;

import org.jspecify.annotations.NullMarked;
