package dev.dlock.memcached;

import java.io.ByteArrayOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.net.SocketTimeoutException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/**
 * One TCP connection to a memcached server, used by one thread at a time: a batch of requests goes out in
 * one write, and their replies are read back in order, the whole exchange within the timeout. After any
 * failure, an error reply included, the connection is in an unknown state and must be closed.
 */
final class MetaConnection implements AutoCloseable {

    /** Longer than any reply line of the commands this client sends. */
    private static final int MAX_LINE = 1024;

    private final Socket socket;
    private final InputStream in;
    private final OutputStream out;
    private final long timeoutNanos;
    private final byte[] buffer = new byte[8192];
    private int position;
    private int limit;

    /** Connects to {@code address} (resolved now, if it was not) within {@code timeoutMillis}. */
    MetaConnection(InetSocketAddress address, int timeoutMillis) throws IOException {
        this.timeoutNanos = TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        Socket connecting = new Socket();
        try {
            connecting.setTcpNoDelay(true);
            connecting.setKeepAlive(true);
            connecting.connect(address.isUnresolved() ? new InetSocketAddress(address.getHostString(), address.getPort()) : address,
                    timeoutMillis);
            this.in = connecting.getInputStream();
            this.out = connecting.getOutputStream();
        } catch (IOException e) {
            connecting.close();
            throw e;
        }
        this.socket = connecting;
    }

    /** Sends {@code requests} in one write and reads one reply per request, in order, within the timeout. */
    List<MetaReply> exchange(List<MetaRequest> requests) throws IOException {
        long deadline = System.nanoTime() + timeoutNanos;
        ByteArrayOutputStream batch = new ByteArrayOutputStream();
        for (MetaRequest request : requests) {
            batch.writeBytes(request.bytes());
        }
        out.write(batch.toByteArray());
        out.flush();
        List<MetaReply> replies = new ArrayList<>(requests.size());
        for (MetaRequest request : requests) {
            replies.add(readReply(request, deadline));
        }
        return replies;
    }

    private MetaReply readReply(MetaRequest request, long deadline) throws IOException {
        String line = readLine(deadline);
        if (line.equals("ERROR") || line.startsWith("CLIENT_ERROR") || line.startsWith("SERVER_ERROR")) {
            throw new MemcachedErrorReply("memcached answered '" + line + "' to '" + request + "'");
        }
        byte[] value = null;
        if (line.startsWith("VA ")) {
            int end = line.indexOf(' ', 3);
            int size = Integer.parseInt(end < 0 ? line.substring(3) : line.substring(3, end));
            value = new byte[size];
            for (int i = 0; i < size; i++) {
                value[i] = (byte) read(deadline);
            }
            if (read(deadline) != '\r' || read(deadline) != '\n') {
                throw new IOException("memcached's value for '" + request + "' did not end with CRLF");
            }
        }
        try {
            return MetaReply.parse(line, value);
        } catch (IllegalArgumentException e) {
            throw new IOException("unreadable reply '" + line + "' to '" + request + "'", e);
        }
    }

    private String readLine(long deadline) throws IOException {
        StringBuilder line = new StringBuilder();
        while (true) {
            int next = read(deadline);
            if (next == '\r') {
                if (read(deadline) != '\n') {
                    throw new IOException("a reply line of memcached did not end with CRLF: " + line);
                }
                return line.toString();
            }
            if (line.length() >= MAX_LINE) {
                throw new IOException("a reply line of memcached is longer than " + MAX_LINE + " characters");
            }
            line.append((char) next);
        }
    }

    private int read(long deadline) throws IOException {
        if (position == limit) {
            long left = deadline - System.nanoTime();
            if (left <= 0) {
                throw timedOut();
            }
            socket.setSoTimeout((int) Math.max(1, TimeUnit.NANOSECONDS.toMillis(left)));
            int count;
            try {
                count = in.read(buffer);
            } catch (SocketTimeoutException e) {
                throw timedOut();
            }
            if (count < 0) {
                throw new EOFException("memcached closed the connection");
            }
            position = 0;
            limit = count;
        }
        return buffer[position++] & 0xff;
    }

    private SocketTimeoutException timedOut() {
        return new SocketTimeoutException("no complete reply within " + TimeUnit.NANOSECONDS.toMillis(timeoutNanos) + " ms");
    }

    @Override
    public void close() {
        try {
            socket.close();
        } catch (IOException e) {
            // Nothing to do: the connection is given up either way.
        }
    }

    /** An {@code ERROR}, {@code CLIENT_ERROR} or {@code SERVER_ERROR} reply: the server is up but refused the command. */
    static final class MemcachedErrorReply extends IOException {
        private static final long serialVersionUID = 1L;

        MemcachedErrorReply(String message) {
            super(message);
        }
    }
}
