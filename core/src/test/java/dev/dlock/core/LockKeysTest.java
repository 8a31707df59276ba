package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

/** The annotation's key form, {@code <name>:<key>}, built and recognised in one place. */
class LockKeysTest {

    @Test
    void anAnnotationKeyIsTheLockNameAColonAndTheKey() {
        assertThat(LockKeys.named("orders", "42")).isEqualTo("orders:42");
        assertThat(LockKeys.named("orders", "a:b")).as("a key may hold the separator itself").isEqualTo("orders:a:b");
    }

    @Test
    void aKeyIsOneOfALocksKeysOnlyWithTheLocksNameAndTheSeparatorInFront() {
        assertThat(LockKeys.isNamedKeyOf("orders", "orders:42")).isTrue();
        assertThat(LockKeys.isNamedKeyOf("orders", LockKeys.named("orders", "x"))).isTrue();
        assertThat(LockKeys.isNamedKeyOf("orders", "orders-archive:42")).as("another lock whose name starts alike").isFalse();
        assertThat(LockKeys.isNamedKeyOf("orders", "orders")).as("the bare name").isFalse();
        assertThat(LockKeys.isNamedKeyOf("order", "orders:42")).isFalse();
    }
}
