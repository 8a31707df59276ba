package dev.dlock.boot.jdbc;

import dev.dlock.boot.JdbcFencingAutoConfiguration;
import dev.dlock.fencing.FenceDialect;
import dev.dlock.fencing.JdbcFencing;
import org.h2.jdbcx.JdbcDataSource;
import org.junit.jupiter.api.Test;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.test.context.FilteredClassLoader;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;

import static org.assertj.core.api.Assertions.assertThat;

/** The JdbcFencing bean: over the application's JdbcTemplate, replaceable, absent without spring-jdbc or a JdbcTemplate. */
class JdbcFencingAutoConfigurationTest {

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(JdbcFencingAutoConfiguration.class));

    @Test
    void aJdbcTemplateGetsAGuardOverIt() {
        runner.withBean(JdbcTemplate.class, () -> new JdbcTemplate(h2("fencing-boot"))).run(context -> {
            assertThat(context).hasSingleBean(JdbcFencing.class);
            assertThat(context.getBean(JdbcFencing.class).dialect()).isEqualTo(FenceDialect.H2);
        });
    }

    @Test
    void anApplicationsOwnGuardIsKept() {
        JdbcFencing own = new JdbcFencing(new JdbcTemplate(h2("fencing-own")), "app_fence", FenceDialect.H2);
        runner.withBean(JdbcTemplate.class, () -> new JdbcTemplate(h2("fencing-own"))).withBean(JdbcFencing.class, () -> own)
                .run(context -> assertThat(context).getBean(JdbcFencing.class).isSameAs(own));
    }

    @Test
    void withoutSpringJdbcOrAJdbcTemplateThereIsNoGuardAndTheContextStarts() {
        runner.withClassLoader(new FilteredClassLoader(JdbcTemplate.class))
                .run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(JdbcFencing.class));
        runner.run(context -> assertThat(context).hasNotFailed().doesNotHaveBean(JdbcFencing.class));
    }

    private static JdbcDataSource h2(String name) {
        JdbcDataSource h2 = new JdbcDataSource();
        h2.setURL("jdbc:h2:mem:" + name + ";DB_CLOSE_DELAY=-1");
        return h2;
    }
}
