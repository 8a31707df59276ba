package dev.dlock.boottests;

import dev.dlock.boot.DistributedLockAutoConfiguration;
import dev.dlock.boot.RedisLockStoreAutoConfiguration;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockManager;
import dev.dlock.testkit.redis.RedisServerProcess;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.autoconfigure.ssl.SslAutoConfiguration;
import org.springframework.boot.test.context.assertj.AssertableApplicationContext;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.boot.test.system.CapturedOutput;
import org.springframework.boot.test.system.OutputCaptureExtension;

import redis.clients.jedis.Jedis;

import javax.net.ssl.SSLException;
import java.security.cert.CertificateException;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * dlock's TLS connections honour what the SSL bundle says beyond its key material, as Spring Data
 * Redis does (the options' ciphers and protocols), and check the server's host name against its
 * certificate unless {@code dlock.redis.ssl-verify-hostname=false}; a refused handshake fails the start
 * (dlock.verify-on-start). Against real redis-servers with {@code tls-port}: one that speaks TLS 1.2 with
 * one cipher only, one whose certificate names no host.
 */
@ExtendWith(OutputCaptureExtension.class)
class TlsOptionsTest {

    private static final TestCertificates CERTIFICATES = TestCertificates.shared();
    private static final String ONLY_CIPHER = "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256";
    private static final String OTHER_CIPHER = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384";

    private static final int STRICT_PORT = TlsApplicationTest.freePort();
    /** TLS 1.2 only, and of its ciphers only ECDHE-ECDSA-AES128-GCM-SHA256 (OpenSSL's name for {@link #ONLY_CIPHER}). */
    private static final RedisServerProcess STRICT = RedisServerProcess.start(List.of(
            "--tls-port", Integer.toString(STRICT_PORT),
            "--tls-cert-file", CERTIFICATES.serverCertPem().toString(),
            "--tls-key-file", CERTIFICATES.serverKeyPem().toString(),
            "--tls-ca-cert-file", CERTIFICATES.caPem().toString(),
            "--tls-auth-clients", "no",
            "--tls-protocols", "TLSv1.2",
            "--tls-ciphers", "ECDHE-ECDSA-AES128-GCM-SHA256"));

    private static final int UNNAMED_PORT = TlsApplicationTest.freePort();
    /** A certificate from the trusted CA that names no host (the client's, which has no subject alternative name). */
    private static final RedisServerProcess UNNAMED = RedisServerProcess.start(List.of(
            "--tls-port", Integer.toString(UNNAMED_PORT),
            "--tls-cert-file", CERTIFICATES.clientCertPem().toString(),
            "--tls-key-file", CERTIFICATES.clientKeyPem().toString(),
            "--tls-ca-cert-file", CERTIFICATES.caPem().toString(),
            "--tls-auth-clients", "no"));

    private final ApplicationContextRunner runner = new ApplicationContextRunner()
            .withConfiguration(AutoConfigurations.of(SslAutoConfiguration.class, RedisLockStoreAutoConfiguration.class,
                    DistributedLockAutoConfiguration.class))
            .withPropertyValues(
                    "dlock.redis.ssl-bundle=dlock",
                    "dlock.redis.timeout=5s",
                    "spring.ssl.bundle.jks.dlock.truststore.location=" + CERTIFICATES.trustStore().toUri(),
                    "spring.ssl.bundle.jks.dlock.truststore.password=" + TestCertificates.STORE_PASSWORD,
                    "spring.ssl.bundle.jks.dlock.truststore.type=PKCS12");

    @AfterAll
    static void stopRedis() {
        STRICT.close();
        UNNAMED.close();
    }

    @Test
    void theBundlesCipherAndProtocolThatTheServerSpeaksAreUsed() {
        runner.withPropertyValues(strictUrl(),
                        "spring.ssl.bundle.jks.dlock.options.ciphers=" + ONLY_CIPHER,
                        "spring.ssl.bundle.jks.dlock.options.enabled-protocols=TLSv1.2")
                .run(context -> assertLocksIn(context.getBean(LockManager.class), STRICT, "options-match"));
    }

    @Test
    void aProtocolTheBundleLeavesOutIsNotUsed() {
        // Without the bundle's options the JDK offers TLS 1.2 too, and the handshake succeeds.
        runner.withPropertyValues(strictUrl(), "spring.ssl.bundle.jks.dlock.options.enabled-protocols=TLSv1.3")
                .run(context -> assertRefused(context, SSLException.class, null));
    }

    @Test
    void aCipherTheBundleLeavesOutIsNotUsed() {
        // Without the bundle's options the JDK offers the server's one cipher too, and the handshake succeeds.
        runner.withPropertyValues(strictUrl(), "spring.ssl.bundle.jks.dlock.options.ciphers=" + OTHER_CIPHER)
                .run(context -> assertRefused(context, SSLException.class, null));
    }

    @Test
    void aCertificateThatDoesNotNameTheHostIsRefused() {
        runner.withPropertyValues("dlock.redis.url=rediss://127.0.0.1:" + UNNAMED_PORT)
                .run(context -> assertRefused(context, CertificateException.class, "subject alternative names"));
    }

    @Test
    void aCertificateThatDoesNotNameTheHostIsAcceptedOnlyWhenVerificationIsSwitchedOff(CapturedOutput output) {
        runner.withPropertyValues("dlock.redis.url=rediss://127.0.0.1:" + UNNAMED_PORT,
                        "dlock.redis.ssl-verify-hostname=false")
                .run(context -> assertLocksIn(context.getBean(LockManager.class), UNNAMED, "unverified"));
        assertThat(output.getAll()).as("the startup log says so").contains("(TLS, host name not verified)");
    }

    private static String strictUrl() {
        return "dlock.redis.url=rediss://127.0.0.1:" + STRICT_PORT;
    }

    private static void assertLocksIn(LockManager locks, RedisServerProcess server, String key) {
        try (LockHandle lock = locks.acquire(key, Duration.ZERO); Jedis admin = server.admin()) {
            assertThat(admin.exists("dlock:{" + key + "}")).as("lock key written over TLS").isTrue();
            assertThat(lock.fencingToken()).isPositive();
        }
    }

    /**
     * The start fails (dlock.verify-on-start's PING) for a TLS failure of {@code type}, whose message names
     * {@code detail}, among the causes (a store failure carries the client's exception as suppressed); the
     * failure names the property to check.
     */
    private static void assertRefused(AssertableApplicationContext context, Class<? extends Exception> type, String detail) {
        assertThat(context).hasFailed();
        Throwable failure = context.getStartupFailure();
        assertThat(failure).hasMessageContaining("dlock.redis.url");
        Throwable cause = find(failure, type);
        assertThat(cause).as("a %s among the causes of %s", type.getSimpleName(), failure).isNotNull();
        if (detail != null) {
            assertThat(cause.getMessage()).contains(detail);
        }
    }

    /** The first exception of {@code type} among {@code failure}, its causes and their suppressed exceptions; null if none. */
    private static Throwable find(Throwable failure, Class<? extends Exception> type) {
        for (Throwable cause = failure; cause != null; cause = cause.getCause()) {
            if (type.isInstance(cause)) {
                return cause;
            }
            for (Throwable suppressed : cause.getSuppressed()) {
                Throwable found = find(suppressed, type);
                if (found != null) {
                    return found;
                }
            }
        }
        return null;
    }
}
