package dev.dlock.fencing;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Which field of an entity {@link JpaFencing} fences: the one marked {@code @FencingToken}, of either package. */
class JpaFencingTokenFieldTest {

    static class Marked {
        @dev.dlock.annotation.FencingToken
        private long token;
    }

    static class MarkedTheOldWay {
        @SuppressWarnings("deprecation")
        @FencingToken
        private long token;
    }

    static class InheritsItsMark extends Marked {
        private long balance;
    }

    static class MarkedInt {
        @dev.dlock.annotation.FencingToken
        private int token;
    }

    static class Unmarked {
        private long token;
    }

    @Test
    void theMarkedLongFieldIsTheTokenColumnWhicheverAnnotationMarksIt() {
        assertThat(JpaFencing.tokenField(Marked.class).getName()).isEqualTo("token");
        assertThat(JpaFencing.tokenField(MarkedTheOldWay.class).getDeclaringClass()).isEqualTo(MarkedTheOldWay.class);
        assertThat(JpaFencing.tokenField(InheritsItsMark.class).getDeclaringClass()).isEqualTo(Marked.class);
    }

    @Test
    void aFieldThatCannotHoldATokenOrNoneMarkedIsRefusedNamingTheEntity() {
        assertThatThrownBy(() -> JpaFencing.tokenField(MarkedInt.class)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(MarkedInt.class.getName() + ".token must be a long, is int");
        assertThatThrownBy(() -> JpaFencing.tokenField(Unmarked.class)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining(Unmarked.class.getName() + " has no @FencingToken long field");
    }
}
