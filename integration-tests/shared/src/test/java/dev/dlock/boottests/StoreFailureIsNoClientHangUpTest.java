package dev.dlock.boottests;

import dev.dlock.core.LockBackendException;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;
import org.springframework.web.util.DisconnectedClientHelper;
import redis.clients.jedis.exceptions.JedisConnectionException;

import java.io.EOFException;
import java.net.SocketException;
import java.sql.SQLException;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Spring MVC answers nothing (a 200 with an empty body, logged at DEBUG) for an exception it takes for
 * a client that hung up: one with an {@code EOFException} (and a few other types) in its cause chain,
 * or whose innermost message says "broken pipe" or "connection reset by peer" (DisconnectedClientHelper,
 * Spring Framework 6.2 and 7.0). Store failures shaped as the clients throw them are read that way; the
 * exception dlock makes of them never is, and still names the store's exception.
 */
class StoreFailureIsNoClientHangUpTest {

    static Stream<Arguments> storeExceptions() {
        return Stream.of(
                Arguments.of("PostgreSQL driver, server gone", new SQLException(
                        "An I/O error occurred while sending to the backend.", "08006", new EOFException())),
                Arguments.of("Jedis, write to a closed socket", new JedisConnectionException(new SocketException("Broken pipe"))),
                Arguments.of("Jedis, connection reset", new JedisConnectionException(
                        new SocketException("Connection reset by peer"))));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("storeExceptions")
    void aStoreFailureIsNotTakenForAClientThatHungUp(String shape, Exception storeException) {
        assertThat(DisconnectedClientHelper.isClientDisconnectedException(storeException))
                .as("Spring's reading of the client's own exception").isTrue();

        LockBackendException failure = LockBackendException.storeFailure("Redis tryAcquire of key 'k' failed", storeException);

        assertThat(DisconnectedClientHelper.isClientDisconnectedException(failure)).as("Spring's reading of dlock's").isFalse();
        assertThat(failure).hasNoCause().hasMessageStartingWith("Redis tryAcquire of key 'k' failed: " + storeException.getClass().getName());
        assertThat(failure.getSuppressed()).containsExactly(storeException);
        LockBackendException afterRetries = new LockBackendException("dlock could not release (" + failure.getMessage() + ")", failure);
        assertThat(DisconnectedClientHelper.isClientDisconnectedException(afterRetries)).as("a failure caused by it").isFalse();
    }
}
