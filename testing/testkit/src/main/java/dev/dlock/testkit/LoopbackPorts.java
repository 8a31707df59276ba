package dev.dlock.testkit;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Loopback ports for the servers tests start. A port the kernel hands out for {@code bind(0)} comes from its ephemeral
 * range, which every outgoing connection also draws its source port from: a server stopped to be restarted on its port
 * found that port taken by another test JVM's connection meanwhile. These ports are drawn at random below that range
 * (Linux starts it at 32768), where no connection takes a port on its own.
 */
public final class LoopbackPorts {

    private static final int LOWEST = 10_000;
    private static final int HIGHEST = 32_000;

    private LoopbackPorts() {
    }

    /** A loopback port nothing listens on now, below the ephemeral range; never one of {@code avoided}. */
    public static int free(int... avoided) {
        for (int attempt = 0; attempt < 500; attempt++) {
            int port = LOWEST + ThreadLocalRandom.current().nextInt(HIGHEST - LOWEST);
            if (contains(avoided, port)) {
                continue;
            }
            try (ServerSocket socket = new ServerSocket()) {
                socket.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port), 1);
                return port;
            } catch (IOException taken) {
                // someone listens there: draw again
            }
        }
        throw new IllegalStateException("no free loopback port between " + LOWEST + " and " + HIGHEST);
    }

    private static boolean contains(int[] ports, int port) {
        for (int candidate : ports) {
            if (candidate == port) {
                return true;
            }
        }
        return false;
    }
}
