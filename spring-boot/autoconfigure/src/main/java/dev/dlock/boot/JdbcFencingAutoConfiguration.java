package dev.dlock.boot;

import dev.dlock.fencing.JdbcFencing;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnSingleCandidate;
import org.springframework.context.annotation.Bean;
import org.springframework.jdbc.core.JdbcTemplate;

import static dev.dlock.boot.DistributedLockProperties.PREFIX;

/**
 * The JDBC fencing guard ({@link JdbcFencing}) as a bean when spring-jdbc is present and the application has one
 * {@link JdbcTemplate} (Boot makes one for its DataSource), whichever store holds the locks.
 */
// Boot 4 and Boot 3.5 keep JdbcTemplateAutoConfiguration in different packages; the line's own name is found, the other ignored.
@AutoConfiguration(afterName = {"org.springframework.boot.jdbc.autoconfigure.JdbcTemplateAutoConfiguration",
        "org.springframework.boot.autoconfigure.jdbc.JdbcTemplateAutoConfiguration"})
@ConditionalOnClass({JdbcFencing.class, JdbcTemplate.class})
@ConditionalOnSingleCandidate(JdbcTemplate.class)
@ConditionalOnBooleanProperty(name = PREFIX + ".enabled", matchIfMissing = true)
public class JdbcFencingAutoConfiguration {

    /** Fences writes made through the application's {@code JdbcTemplate}; fence rows in {@code dlock_fence}, dialect detected. */
    @Bean
    @ConditionalOnMissingBean
    public JdbcFencing dlockJdbcFencing(JdbcTemplate jdbcTemplate) {
        return new JdbcFencing(jdbcTemplate);
    }
}
