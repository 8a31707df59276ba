package dev.dlock.testkit.faults;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.CopyOnWriteArrayList;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The protected resource of the fault suite: workers report every critical section to it over a
 * loopback socket, and it refuses a write whose fencing token is lower than one it already accepted
 * for the key, as a real resource guarded by fencing tokens should. Beside refereeing, it keeps the
 * score: sections run, overlaps seen by wall clock, overlaps that got past the token check, stale
 * writes refused, and sections that were overtaken without their holder being told.
 *
 * <p>Protocol, one line per request and one reply line ({@code OK} or {@code STALE}):
 * {@code ENTER key token section}, {@code WRITE key token section}, {@code LEAVE key token section} (sent
 * before the release, so the wall-clock window ends while the lock is still held), {@code EXIT key token
 * section lost(0|1)} (after the release, with what it reported), {@code ERROR kind}. A section id is unique per
 * acquisition; a worker's connection closing (the JVM was killed) takes its sections out of the keys they were in.
 */
final class Referee implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(Referee.class);

    /** What the referee knows of one key. */
    private static final class KeyState {
        long highestToken = Long.MIN_VALUE;
        String highestTokenSection;
        final Set<String> inside = new LinkedHashSet<>();
    }

    /** A section the referee saw enter. */
    private static final class Section {
        final String key;
        final long token;
        final long enteredAtNanos;
        boolean overtaken;
        String overtakenBy;

        Section(String key, long token) {
            this.key = key;
            this.token = token;
            this.enteredAtNanos = System.nanoTime();
        }
    }

    private final ServerSocket server;
    private final Thread acceptor;
    private final List<Socket> connections = new CopyOnWriteArrayList<>();
    private final Map<String, KeyState> keys = new HashMap<>();
    private final Map<String, Section> open = new HashMap<>();
    private final Map<String, Long> errors = new TreeMap<>();
    private final List<String> silentLosses = new ArrayList<>();
    /** Completed sections in completion order: when, and on which key. */
    private final List<Completion> completions = new ArrayList<>();

    private record Completion(long atNanos, String key) {
    }

    private long sectionsCompleted;
    private long wallClockOverlaps;
    private long letThrough;
    private long staleRefused;
    private long lossesReported;
    private long lossesHappened;
    private long falseAlarms;
    private volatile boolean closed;

    Referee() throws IOException {
        server = new ServerSocket(0, 200, InetAddress.getLoopbackAddress());
        acceptor = new Thread(this::accept, "dlock-fault-referee");
        acceptor.setDaemon(true);
        acceptor.start();
    }

    int port() {
        return server.getLocalPort();
    }

    private void accept() {
        while (!closed) {
            try {
                Socket socket = server.accept();
                connections.add(socket);
                Thread reader = new Thread(() -> serve(socket), "dlock-fault-referee-" + socket.getPort());
                reader.setDaemon(true);
                reader.start();
            } catch (IOException e) {
                if (!closed) {
                    log.warn("referee stopped accepting: {}", e.toString());
                }
                return;
            }
        }
    }

    private void serve(Socket socket) {
        Set<String> sectionsOfConnection = new HashSet<>();
        try (socket;
             BufferedReader in = new BufferedReader(new InputStreamReader(socket.getInputStream(), StandardCharsets.UTF_8));
             PrintWriter out = new PrintWriter(socket.getOutputStream(), true, StandardCharsets.UTF_8)) {
            String line;
            while ((line = in.readLine()) != null) {
                out.println(handle(line.split(" "), sectionsOfConnection));
            }
        } catch (IOException e) {
            // The worker JVM was killed or stopped: its connection ends here.
        } finally {
            abandon(sectionsOfConnection);
        }
    }

    private synchronized String handle(String[] request, Set<String> sectionsOfConnection) {
        switch (request[0]) {
            case "ENTER": {
                String key = request[1];
                long token = Long.parseLong(request[2]);
                String id = request[3];
                KeyState state = keys.computeIfAbsent(key, k -> new KeyState());
                Section section = new Section(key, token);
                open.put(id, section);
                sectionsOfConnection.add(id);
                boolean stale = token < state.highestToken;
                if (!state.inside.isEmpty()) {
                    wallClockOverlaps++;
                }
                // A newcomer with a stale token is the one who lost its lease (its write is refused below); the
                // sections inside are overtaken only by a newcomer the resource accepts.
                if (!stale) {
                    for (String other : state.inside) {
                        Section earlier = open.get(other);
                        if (earlier != null && !earlier.overtaken) {
                            earlier.overtaken = true;
                            earlier.overtakenBy = id + " (token " + token + ")";
                        }
                    }
                }
                state.inside.add(id);
                return write(state, token, id);
            }
            case "WRITE":
                return write(keys.computeIfAbsent(request[1], k -> new KeyState()), Long.parseLong(request[2]), request[3]);
            case "LEAVE": {
                KeyState state = keys.get(request[1]);
                if (state != null) {
                    state.inside.remove(request[3]);
                }
                return "OK";
            }
            case "EXIT": {
                String id = request[3];
                boolean lost = "1".equals(request[4]);
                Section section = open.remove(id);
                sectionsOfConnection.remove(id);
                if (section != null) {
                    keys.get(section.key).inside.remove(id);
                    sectionsCompleted++;
                    completions.add(new Completion(System.nanoTime(), section.key));
                    if (section.overtaken) {
                        lossesHappened++;
                        if (lost) {
                            lossesReported++;
                        } else {
                            silentLosses.add(id + " on key " + section.key + " (token " + section.token
                                    + ") was overtaken by " + section.overtakenBy + " and its release reported no loss");
                        }
                    } else if (lost) {
                        falseAlarms++;
                    }
                }
                return "OK";
            }
            case "ERROR":
                errors.merge(request[1], 1L, Long::sum);
                return "OK";
            default:
                return "UNKNOWN";
        }
    }

    /** The fencing check: a token lower than the highest accepted for the key is refused. */
    private String write(KeyState state, long token, String section) {
        if (token < state.highestToken) {
            staleRefused++;
            Section stale = open.get(section);
            if (stale != null && !stale.overtaken) {
                stale.overtaken = true;
                stale.overtakenBy = "a holder with token " + state.highestToken;
            }
            return "STALE";
        }
        if (token == state.highestToken && !section.equals(state.highestTokenSection)) {
            // Two acquisitions presented the same token: the resource cannot tell them apart.
            letThrough++;
        }
        state.highestToken = token;
        state.highestTokenSection = section;
        return "OK";
    }

    /** Section ids read {@code w<worker>-t<thread>-<sequence>}. */
    private static int workerOf(String sectionId) {
        return Integer.parseInt(sectionId.substring(1, sectionId.indexOf('-')));
    }

    private synchronized void abandon(Set<String> sections) {
        for (String id : sections) {
            Section section = open.remove(id);
            if (section != null) {
                keys.get(section.key).inside.remove(id);
            }
        }
    }

    /** Which workers are inside a critical section now, by the worker prefix of the section ids. */
    synchronized Set<Integer> workersInside() {
        Set<Integer> workers = new HashSet<>();
        for (String id : open.keySet()) {
            workers.add(workerOf(id));
        }
        return workers;
    }

    /** When the first section on one of {@code keys} (any key when empty) completed after {@code nanos}; -1 when none has yet. */
    synchronized long firstCompletionAfter(long nanos, Set<String> keys) {
        long first = -1;
        for (int i = completions.size() - 1; i >= 0 && completions.get(i).atNanos() - nanos > 0; i--) {
            if (keys.isEmpty() || keys.contains(completions.get(i).key())) {
                first = completions.get(i).atNanos();
            }
        }
        return first;
    }

    /** The keys the sections of {@code worker} are inside now. */
    synchronized Set<String> keysInsideOf(int worker) {
        Set<String> inside = new HashSet<>();
        open.forEach((id, section) -> {
            if (workerOf(id) == worker) {
                inside.add(section.key);
            }
        });
        return inside;
    }

    synchronized long sectionsCompleted() {
        return sectionsCompleted;
    }

    /** The score so far. */
    synchronized FaultReport.Score score() {
        return new FaultReport.Score(sectionsCompleted, wallClockOverlaps, letThrough, staleRefused, lossesHappened,
                lossesReported, List.copyOf(silentLosses), falseAlarms, Map.copyOf(errors));
    }

    @Override
    public void close() throws IOException {
        closed = true;
        server.close();
        for (Socket socket : connections) {
            socket.close();
        }
    }
}
