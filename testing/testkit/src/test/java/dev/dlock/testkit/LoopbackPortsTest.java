package dev.dlock.testkit;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assumptions.assumeThat;

/**
 * A test server's port is one no outgoing connection takes on its own: below the kernel's ephemeral range. A Redlock
 * master restarted on its port found it taken ("Address already in use") when ports came from {@code bind(0)}.
 */
class LoopbackPortsTest {

    @Test
    void portsAreFreeAndBelowTheEphemeralRange() throws IOException {
        Path range = Path.of("/proc/sys/net/ipv4/ip_local_port_range");
        assumeThat(Files.exists(range)).as("a Linux kernel that tells its ephemeral range").isTrue();
        int ephemeralLow = Integer.parseInt(Files.readAllLines(range).get(0).trim().split("\\s+")[0]);
        for (int draw = 0; draw < 50; draw++) {
            int port = LoopbackPorts.free(ephemeralLow - 1);
            assertThat(port).as("a drawn port").isLessThan(ephemeralLow).isNotEqualTo(ephemeralLow - 1);
            try (ServerSocket server = new ServerSocket()) {
                server.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            }
        }
    }
}
