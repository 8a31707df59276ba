package dev.dlock.boot.inmemory;

import org.junit.jupiter.api.Test;
import org.springframework.boot.WebApplicationType;
import org.springframework.boot.builder.SpringApplicationBuilder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * A user who adds the store-neutral starter but no store starter, and chooses no store, learns at
 * startup which dependency or property is missing, instead of a bare "no bean of type LockBackend".
 */
class NoStoreApplicationTest {

    @Test
    void withoutAStoreStarterTheStartFailsNamingTheStarterAndTheProperty() {
        assertThatThrownBy(() -> new SpringApplicationBuilder(CounterApplication.class)
                .web(WebApplicationType.NONE).properties("spring.main.banner-mode=off").run().close())
                .satisfies(failure -> {
                    Throwable root = failure;
                    while (root.getCause() != null) {
                        root = root.getCause();
                    }
                    assertThat(root).isInstanceOf(IllegalStateException.class).hasMessageContaining("dlock.store=redis")
                            .hasMessageContaining("dev.dlock:dlock-redis-spring-boot-starter")
                            .hasMessageContaining("dlock.store=in-memory");
                });
    }
}
