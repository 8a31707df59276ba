package dev.dlock.boottests;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.GeneralSecurityException;
import java.security.KeyStore;
import java.util.ArrayList;
import java.util.Base64;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * A test CA, a server certificate for 127.0.0.1 and a client certificate, made with the JDK's own keytool (no openssl, no extra library: what a machine
 * with only a JDK has). Gives PEM files for redis-server and PKCS#12 stores for the client's SSL bundle.
 * Made once per test JVM ({@link #shared()}): keytool runs take seconds.
 *
 * @param directory where the files are
 */
record TestCertificates(Path directory) {

    static final String STORE_PASSWORD = "store-pw-test";

    private static TestCertificates shared;

    /** The certificates of this test JVM, made on first use in a temporary directory deleted at exit. */
    static synchronized TestCertificates shared() {
        if (shared == null) {
            try {
                Path directory = Files.createTempDirectory("dlock-tls-");
                directory.toFile().deleteOnExit();
                shared = create(directory);
            } catch (IOException e) {
                throw new IllegalStateException("Cannot create a directory for the test certificates", e);
            }
        }
        return shared;
    }

    /** Makes the CA and both certificates under {@code directory}. */
    static TestCertificates create(Path directory) {
        TestCertificates certificates = new TestCertificates(directory);
        certificates.make();
        return certificates;
    }

    Path caPem() {
        return directory.resolve("ca.pem");
    }

    Path serverCertPem() {
        return directory.resolve("server.pem");
    }

    Path serverKeyPem() {
        return directory.resolve("server.key");
    }

    /** The client's certificate chain: signed by the CA, with no subject alternative name (so no host matches it). */
    Path clientCertPem() {
        return directory.resolve("client-chain.pem");
    }

    Path clientKeyPem() {
        return directory.resolve("client.key");
    }

    /** PKCS#12 with the client's key and certificate chain. */
    Path clientKeyStore() {
        return directory.resolve("client.p12");
    }

    /** PKCS#12 with the CA certificate only. */
    Path trustStore() {
        return directory.resolve("trust.p12");
    }

    private void make() {
        keytool("-genkeypair", "-alias", "ca", "-keyalg", "EC", "-groupname", "secp256r1", "-dname", "CN=dlock test CA",
                "-ext", "bc:c", "-validity", "2", "-keystore", "ca.p12");
        keytool("-exportcert", "-rfc", "-alias", "ca", "-keystore", "ca.p12", "-file", "ca.pem");
        keytool("-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", "trust.p12");
        signed("server", "CN=localhost", "-ext", "SAN=ip:127.0.0.1,dns:localhost");
        signed("client", "CN=dlock client");
        writePrivateKeyPem("server.p12", "server", serverKeyPem());
        writePrivateKeyPem("client.p12", "client", clientKeyPem());
        try {
            Files.copy(directory.resolve("server-chain.pem"), serverCertPem());
        } catch (IOException e) {
            throw new IllegalStateException(e);
        }
    }

    /** A key pair in {@code <name>.p12} whose certificate the CA signed, chain imported back. */
    private void signed(String name, String dname, String... extensions) {
        String store = name + ".p12";
        keytool("-genkeypair", "-alias", name, "-keyalg", "EC", "-groupname", "secp256r1", "-dname", dname,
                "-validity", "2", "-keystore", store);
        keytool("-certreq", "-alias", name, "-keystore", store, "-file", name + ".csr");
        List<String> gencert = new ArrayList<>(List.of("-gencert", "-rfc", "-alias", "ca", "-keystore", "ca.p12",
                "-validity", "2", "-infile", name + ".csr", "-outfile", name + "-chain.pem"));
        gencert.addAll(List.of(extensions));
        keytool(gencert.toArray(String[]::new));
        keytool("-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem", "-keystore", store);
        keytool("-importcert", "-alias", name, "-file", name + "-chain.pem", "-keystore", store);
    }

    private void writePrivateKeyPem(String store, String alias, Path target) {
        try (InputStream in = Files.newInputStream(directory.resolve(store))) {
            KeyStore keyStore = KeyStore.getInstance("PKCS12");
            keyStore.load(in, STORE_PASSWORD.toCharArray());
            byte[] pkcs8 = keyStore.getKey(alias, STORE_PASSWORD.toCharArray()).getEncoded();
            String pem = "-----BEGIN PRIVATE KEY-----\n"
                    + Base64.getMimeEncoder(64, "\n".getBytes(StandardCharsets.US_ASCII)).encodeToString(pkcs8)
                    + "\n-----END PRIVATE KEY-----\n";
            Files.writeString(target, pem, StandardCharsets.US_ASCII);
        } catch (IOException | GeneralSecurityException e) {
            throw new IllegalStateException("Cannot export the private key of " + alias, e);
        }
    }

    private void keytool(String... arguments) {
        List<String> command = new ArrayList<>();
        command.add(Path.of(System.getProperty("java.home"), "bin", "keytool").toString());
        // Thirteen keytool JVMs per test JVM: EC keys and a light JVM take about half the CPU of RSA on the defaults.
        command.addAll(List.of("-J-XX:TieredStopAtLevel=1", "-J-XX:+UseSerialGC"));
        command.addAll(List.of(arguments));
        command.addAll(List.of("-storepass", STORE_PASSWORD, "-storetype", "PKCS12"));
        try {
            Process process = new ProcessBuilder(command).directory(directory.toFile()).redirectErrorStream(true).start();
            String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!process.waitFor(60, TimeUnit.SECONDS) || process.exitValue() != 0) {
                throw new IllegalStateException("keytool " + arguments[0] + " failed: " + output);
            }
        } catch (IOException e) {
            throw new IllegalStateException("Cannot run keytool from " + System.getProperty("java.home"), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("Interrupted while running keytool", e);
        }
    }
}
