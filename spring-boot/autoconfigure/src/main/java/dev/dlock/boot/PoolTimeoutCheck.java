package dev.dlock.boot;

import java.sql.SQLException;
import java.time.Duration;

import javax.sql.DataSource;

import com.zaxxer.hikari.HikariConfigMXBean;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * Warns at startup when the application's Hikari pool would hold a lock call longer than a lock statement may take.
 * With the database down a call waits for a connection up to the pool's connection timeout (Hikari's default is
 * 30 s); a statement on a connection it already has is cut after the query timeout plus 2 s. Only the pool can keep
 * the first wait as short as the second, and only the application can set it.
 */
final class PoolTimeoutCheck {

    private static final Logger log = LoggerFactory.getLogger(PoolTimeoutCheck.class);
    private static final boolean HIKARI_PRESENT =
            ClassUtils.isPresent("com.zaxxer.hikari.HikariConfigMXBean", PoolTimeoutCheck.class.getClassLoader());
    /** The network timeout is this much longer than the query timeout (see JdbcLockBackend). */
    static final Duration NETWORK_MARGIN = Duration.ofSeconds(2);

    private PoolTimeoutCheck() {
    }

    /** Logs a WARN when {@code dataSource} is (or wraps) a Hikari pool whose connection timeout exceeds {@code queryTimeout} + 2 s. */
    static void warnIfLonger(DataSource dataSource, Duration queryTimeout) {
        if (!HIKARI_PRESENT) {
            return;
        }
        Duration connectionTimeout = Hikari.connectionTimeout(dataSource);
        Duration statementBound = queryTimeout.plus(NETWORK_MARGIN);
        if (connectionTimeout != null && connectionTimeout.compareTo(statementBound) > 0) {
            log.warn("dlock: the DataSource's pool waits up to {} for a connection (spring.datasource.hikari.connection-timeout), "
                    + "longer than a lock statement may take ({}.query-timeout {} + 2s): with the database down, every "
                    + "locked call waits that long before it fails. Set spring.datasource.hikari.connection-timeout to {} "
                    + "or less (docs/jdbc.md, Failures)", format(connectionTimeout), JdbcStoreProperties.PREFIX,
                    format(queryTimeout), format(statementBound));
        }
    }

    private static String format(Duration duration) {
        return duration.toMillis() % 1000 == 0 ? duration.toSeconds() + "s" : duration.toMillis() + "ms";
    }

    /** Hikari's types, loaded only when Hikari is on the class path. */
    private static final class Hikari {
        /** The pool's connection timeout, or null when {@code dataSource} is no Hikari pool (nor wraps one). */
        static Duration connectionTimeout(DataSource dataSource) {
            try {
                if (dataSource instanceof HikariConfigMXBean hikari) {
                    return Duration.ofMillis(hikari.getConnectionTimeout());
                }
                if (dataSource.isWrapperFor(HikariConfigMXBean.class)) {
                    return Duration.ofMillis(dataSource.unwrap(HikariConfigMXBean.class).getConnectionTimeout());
                }
            } catch (SQLException | RuntimeException e) {
                log.debug("Could not read the pool's connection timeout: {}", e.toString());
            }
            return null;
        }
    }
}
