package dev.dlock.integration;

import dev.dlock.testkit.ChildJvm;
import dev.dlock.testkit.redis.RedisServerExtension;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Leader election with Spring Integration's real {@code LockRegistryLeaderInitiator} over dlock's registry, its
 * candidates in separate JVMs ({@link LeaderChild}) on a real Redis, with a 3 s watchdog lease:
 * <ol>
 *   <li>one leader at a time: a second candidate keeps failing to acquire while the first leads;</li>
 *   <li>the leader killed with SIGKILL is replaced within about one lease (the key runs out, nobody releases it), by a
 *       leader with a larger fencing token;</li>
 *   <li>a leader frozen with SIGSTOP past its lease is replaced while frozen, and once resumed (SIGCONT) loses the
 *       leadership itself (its OnRevoked runs, dlock reports the lease lost) and goes back to trying; the new leader's
 *       fencing token — its epoch — is above the frozen one's, so a store that checks tokens refuses the stale leader.</li>
 * </ol>
 * Over all of it, an overlap detector on the granted and revoked events: two leaderships overlap only while the older
 * was frozen, and then with the older epoch.
 */
class LeaderElectionAcrossJvmsTest {

    private static final Logger log = LoggerFactory.getLogger(LeaderElectionAcrossJvmsTest.class);

    private static final Duration LEASE = Duration.ofSeconds(3);
    /** How long to wait for an event that must come (a JVM start on a loaded machine included). */
    private static final Duration PATIENCE = Duration.ofSeconds(90);

    @RegisterExtension
    static final RedisServerExtension redis = new RedisServerExtension();

    private final List<Candidate> candidates = new ArrayList<>();

    @AfterEach
    void stopCandidates() throws IOException {
        for (Candidate candidate : candidates) {
            log.info("candidate {}: its status and output:\n{}", candidate.name, candidate.report());
            signal("CONT", candidate.process);
            candidate.process.destroyForcibly();
            Files.deleteIfExists(candidate.status);
            Files.deleteIfExists(candidate.output);
        }
    }

    @Test
    void oneLeaderAtATimeAKilledLeaderIsReplacedWithinALeaseAndAFrozenOneIsRevokedWithAnOlderEpoch() throws Exception {
        Candidate first = start("first");
        long firstEpoch = first.await("GRANTED").token();
        Candidate second = start("second");
        second.awaitCount("FAILED", 3);
        assertThat(second.events("GRANTED")).as("the second candidate's grants while the first leads").isEmpty();

        // 2. SIGKILL: nobody releases the key; it runs out within a lease of the last renewal.
        long killedAt = System.currentTimeMillis();
        first.process.destroyForcibly();
        assertThat(first.process.waitFor(30, TimeUnit.SECONDS)).isTrue();
        first.endedAt = killedAt;
        Event granted = second.await("GRANTED");
        Duration failover = Duration.ofMillis(granted.at() - killedAt);
        // The key has at most one lease left at the kill, and the follower asks every heartbeat (0.5 s); the rest is
        // slack for a loaded machine. The default registries' own bound would be their expiry (60 s on Redis).
        assertThat(failover).as("from SIGKILL of the leader to the next grant (lease %s)", LEASE)
                .isLessThan(LEASE.multipliedBy(3));
        long secondEpoch = granted.token();
        assertThat(secondEpoch).as("the new leader's epoch").isGreaterThan(firstEpoch);

        // 3. SIGSTOP the leader past its lease: a third candidate takes over while it is frozen.
        Candidate third = start("third");
        third.awaitCount("FAILED", 3);
        second.frozenAt = System.currentTimeMillis();
        signal("STOP", second.process);
        Event thirdGranted;
        try {
            thirdGranted = third.await("GRANTED");
        } finally {
            signal("CONT", second.process);
        }
        assertThat(thirdGranted.at() - second.frozenAt).as("ms from SIGSTOP to the next grant: the frozen leader's "
                + "lease had to run out first").isGreaterThanOrEqualTo(LEASE.toMillis() / 3);
        Event revoked = second.await("REVOKED");
        assertThat(revoked.at()).as("the frozen leader's OnRevoked ran once it was resumed").isGreaterThan(thirdGranted.at());
        second.await("LOST ");
        assertThat(thirdGranted.token()).as("the epoch of the leader that replaced the frozen one")
                .isGreaterThan(secondEpoch);
        // Back to a follower: it tries again, and fails, while the third leads.
        long failedAfterRevoked = second.events("FAILED").stream().filter(e -> e.at() >= revoked.at()).count();
        long deadline = System.nanoTime() + PATIENCE.toNanos();
        while (failedAfterRevoked < 2 && System.nanoTime() - deadline < 0) {
            Thread.sleep(50);
            failedAfterRevoked = second.events("FAILED").stream().filter(e -> e.at() >= revoked.at()).count();
        }
        assertThat(failedAfterRevoked).as("attempts of the revoked leader that found the new one; its events:\n%s",
                second.report()).isGreaterThanOrEqualTo(2);
        assertThat(third.events("REVOKED")).as("revocations of the new leader").isEmpty();
        assertThat(second.events("GRANTED")).as("grants of the revoked leader").hasSize(1);

        assertOneLeaderAtATime();
    }

    /**
     * The overlap detector: every leadership (a grant, until its revocation or the SIGKILL) overlaps no other, except
     * a frozen leader's with the one that replaced it while it was frozen, and that one's epoch is larger.
     */
    private void assertOneLeaderAtATime() throws IOException {
        record Leadership(Candidate candidate, long token, long from, long to) {
        }
        List<Leadership> leaderships = new ArrayList<>();
        for (Candidate candidate : candidates) {
            List<Event> events = candidate.events();
            for (int i = 0; i < events.size(); i++) {
                if (!events.get(i).name().equals("GRANTED")) {
                    continue;
                }
                long to = candidate.endedAt != 0 ? candidate.endedAt : Long.MAX_VALUE;
                for (int j = i + 1; j < events.size(); j++) {
                    if (events.get(j).name().equals("REVOKED")) {
                        to = events.get(j).at();
                        break;
                    }
                }
                leaderships.add(new Leadership(candidate, events.get(i).token(), events.get(i).at(), to));
            }
        }
        assertThat(leaderships).as("leaderships").hasSize(3);
        for (Leadership earlier : leaderships) {
            for (Leadership later : leaderships) {
                if (earlier == later || later.from() < earlier.from() || later.from() >= earlier.to()) {
                    continue;
                }
                assertThat(earlier.candidate().frozenAt != 0 && later.from() >= earlier.candidate().frozenAt)
                        .as("%s led from %s to %s while %s led from %s: only a frozen leader may still believe it leads",
                                earlier.candidate().name, earlier.from(), earlier.to(), later.candidate().name, later.from())
                        .isTrue();
                assertThat(later.token()).as("the epoch of the leader that replaced frozen %s", earlier.candidate().name)
                        .isGreaterThan(earlier.token());
            }
        }
    }

    private Candidate start(String name) throws IOException {
        Path status = Files.createTempFile("dlock-leader-" + name + "-", ".status");
        Path output = Files.createTempFile("dlock-leader-" + name + "-", ".log");
        Process process = new ProcessBuilder(ChildJvm.command(LeaderChild.class, redis.server().host(),
                Integer.toString(redis.server().port()), name, Long.toString(LEASE.toMillis()), status.toString()))
                .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        Candidate candidate = new Candidate(name, process, status, output);
        candidates.add(candidate);
        return candidate;
    }

    /** Sends {@code signal} ({@code STOP}, {@code CONT}) to the child; a child that exited already is left alone. */
    private static void signal(String signal, Process process) {
        if (!process.isAlive()) {
            return;
        }
        try {
            Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(process.pid())).redirectErrorStream(true).start();
            if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
                throw new IllegalStateException("kill -" + signal + " " + process.pid() + " failed: "
                        + new String(kill.getInputStream().readAllBytes(), StandardCharsets.UTF_8));
            }
        } catch (IOException e) {
            throw new IllegalStateException("cannot run kill -" + signal, e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted sending " + signal, e);
        }
    }

    /** One line of a child's status file: its wall clock, the event and what follows it. */
    private record Event(long at, String name, String rest) {

        long token() {
            return Long.parseLong(rest.trim());
        }
    }

    /** A child JVM, its status file and its output. */
    private static final class Candidate {
        final String name;
        final Process process;
        final Path status;
        final Path output;
        /** When it was killed (its leadership ends there), or 0. */
        long endedAt;
        /** When it was frozen, or 0. */
        long frozenAt;

        Candidate(String name, Process process, Path status, Path output) {
            this.name = name;
            this.process = process;
            this.status = status;
            this.output = output;
        }

        /** Waits up to {@link #PATIENCE} for the first event whose line starts with {@code prefix}. */
        Event await(String prefix) throws Exception {
            awaitCount(prefix, 1);
            return events(prefix.trim()).stream().filter(e -> (e.name() + " " + e.rest()).startsWith(prefix)).findFirst()
                    .orElseThrow();
        }

        void awaitCount(String prefix, int count) throws Exception {
            long deadline = System.nanoTime() + PATIENCE.toNanos();
            while (matching(prefix) < count) {
                if (System.nanoTime() - deadline > 0 || !process.isAlive()) {
                    throw new AssertionError(name + " never reported " + count + " x '" + prefix + "'; its status and output:\n"
                            + report());
                }
                Thread.sleep(10);
            }
        }

        private long matching(String prefix) throws IOException {
            return events().stream().filter(e -> (e.name() + " " + e.rest()).startsWith(prefix)).count();
        }

        List<Event> events(String name) throws IOException {
            return events().stream().filter(e -> e.name().equals(name)).toList();
        }

        List<Event> events() throws IOException {
            String text = Files.readString(status, StandardCharsets.UTF_8);
            List<Event> events = new ArrayList<>();
            // Whole lines only: a write may be seen half done.
            for (String line : text.substring(0, text.lastIndexOf('\n') + 1).split("\n")) {
                if (line.isBlank()) {
                    continue;
                }
                String[] parts = line.split(" ", 3);
                events.add(new Event(Long.parseLong(parts[0]), parts[1], parts.length > 2 ? parts[2] : ""));
            }
            return events;
        }

        String report() {
            try {
                return Files.readString(status, StandardCharsets.UTF_8) + "--- output ---\n"
                        + Files.readString(output, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }
    }

}
