package dev.dlock.boottests;

import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;
import org.springframework.test.context.DynamicPropertyRegistry;
import org.springframework.test.context.DynamicPropertySource;

import redis.clients.jedis.Jedis;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * dlock over TLS with client certificates: a redis-server with {@code tls-port} and
 * {@code tls-auth-clients yes}, certificates made by the test with the JDK's keytool, the client's key
 * and the CA given to dlock as an SSL bundle, a {@code rediss://} URL and the ACL user limited to dlock's
 * keys. Runs with the redis-server the harness finds (PATH or embedded-redis 6.2, both built with TLS).
 */
@ExtendWith(OutputCaptureExtension.class)
// A long lease: this test is about the connection, and a TLS handshake on a busy machine may outlast a short one.
@SpringBootTest(classes = StockApplication.class, webEnvironment = SpringBootTest.WebEnvironment.NONE,
        properties = "dlock.lease-time=30s")
class TlsApplicationTest {

    private static final TestCertificates CERTIFICATES = TestCertificates.shared();
    private static final int TLS_PORT = freePort();
    private static final RedisServerProcess REDIS = RedisServerProcess.start(tlsOptions());

    @Autowired
    private LockManager lockManager;

    @Autowired
    private StockService stock;

    @DynamicPropertySource
    static void redis(DynamicPropertyRegistry registry) {
        registry.add("dlock.redis.url", () -> "rediss://127.0.0.1:" + TLS_PORT);
        registry.add("dlock.redis.password", () -> StockApplicationTest.PASSWORD);
        registry.add("dlock.redis.ssl-bundle", () -> "dlock");
        registry.add("spring.ssl.bundle.jks.dlock.keystore.location", () -> CERTIFICATES.clientKeyStore().toUri().toString());
        registry.add("spring.ssl.bundle.jks.dlock.keystore.password", () -> TestCertificates.STORE_PASSWORD);
        registry.add("spring.ssl.bundle.jks.dlock.keystore.type", () -> "PKCS12");
        registry.add("spring.ssl.bundle.jks.dlock.truststore.location", () -> CERTIFICATES.trustStore().toUri().toString());
        registry.add("spring.ssl.bundle.jks.dlock.truststore.password", () -> TestCertificates.STORE_PASSWORD);
        registry.add("spring.ssl.bundle.jks.dlock.truststore.type", () -> "PKCS12");
    }

    @AfterAll
    static void stopRedis() {
        REDIS.close();
    }

    @Test
    void locksOverTlsWithAClientCertificate(CapturedOutput output) {
        try (LockHandle lock = lockManager.acquire("tls-key", Duration.ZERO); Jedis admin = REDIS.admin()) {
            assertThat(admin.exists("dlock:{tls-key}")).as("locked through the TLS port").isTrue();
            assertThat(lock.fencingToken()).isPositive();
        }
        stock.reserve("tls-sku");
        try (Jedis admin = REDIS.admin()) {
            assertThat(admin.info("stats")).as("connections came in over TLS")
                    .containsPattern("total_connections_received:[1-9]");
        }
        assertThat(output.getAll()).contains("(TLS) with SSL bundle dlock")
                .doesNotContain(StockApplicationTest.PASSWORD).doesNotContain(TestCertificates.STORE_PASSWORD);
    }

    private static List<String> tlsOptions() {
        List<String> options = new ArrayList<>(List.of(
                "--tls-port", Integer.toString(TLS_PORT),
                "--tls-cert-file", CERTIFICATES.serverCertPem().toString(),
                "--tls-key-file", CERTIFICATES.serverKeyPem().toString(),
                "--tls-ca-cert-file", CERTIFICATES.caPem().toString(),
                "--tls-auth-clients", "yes"));
        options.addAll(StockApplicationTest.aclUser("dlockapp"));
        return options;
    }

    /** A free loopback port for a {@code tls-port}. */
    static int freePort() {
        try (ServerSocket socket = new ServerSocket(0, 1, InetAddress.getByName("127.0.0.1"))) {
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
