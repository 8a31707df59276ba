package dev.dlock.shedlock;

import dev.dlock.testkit.ChildJvm;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.NavigableMap;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The proof that an application keeps ShedLock and only swaps its provider: {@link ScheduledJobsApplication} — Spring's
 * scheduler, ShedLock's {@code @EnableSchedulerLock} and {@code @SchedulerLock}, dlock's provider — runs in two child
 * JVMs on one store, the second one's clock 150 ms behind. Every tick runs on exactly one of them (a provider that
 * ignored {@code lockAtLeastFor}, or waited for a held name, lets the lagging one run the same tick again); then the
 * instance running the never-ending job is killed with SIGKILL, and the other one takes that job once its
 * {@code lockAtMostFor} (3 s) has passed: not sooner, and not much later (within one more tick and some slack); the
 * survivor carries on with every tick, and fencing tokens rise across both.
 */
abstract class SchedulerLockTwoJvmsContract {

    private static final long LAG_MILLIS = 150;
    private static final Duration START_PATIENCE = Duration.ofSeconds(90);
    private static final int SLOTS_WITH_BOTH = 4;
    private static final int SLOTS_AFTER_THE_KILL = 2;

    private final List<Child> children = new ArrayList<>();

    /** The store as {@link ScheduledJobsApplication} takes it. */
    protected abstract String store();

    @AfterEach
    void killChildren() {
        children.forEach(child -> child.process.destroyForcibly());
    }

    @Test
    void everyTickRunsOnceAcrossTheFleetAndAKilledHolderFreesItsJobAfterLockAtMostFor(@TempDir Path dir) throws Exception {
        Path go = dir.resolve("go");
        Child first = start(dir, "a", 0, go);
        Child second = start(dir, "b", LAG_MILLIS, go);
        first.await("READY", START_PATIENCE);
        second.await("READY", START_PATIENCE);
        long bothReadySlot = Math.floorDiv(System.currentTimeMillis(), 1000);
        awaitTrue(Duration.ofSeconds(30), () -> ticks().tailMap(bothReadySlot, false).size() >= SLOTS_WITH_BOTH);

        Files.createFile(go);
        Child holder = awaitFirst(Duration.ofSeconds(30), child -> child.line("STUCK ") != null);
        Child survivor = holder == first ? second : first;
        holder.process.destroyForcibly();
        assertThat(holder.process.waitFor(30, TimeUnit.SECONDS)).as("the killed instance exited").isTrue();
        long killedSlot = Math.floorDiv(System.currentTimeMillis(), 1000);
        String[] held = holder.line("STUCK ").split(" ");

        Duration patience = ScheduledJobsApplication.STUCK_LOCK_AT_MOST_FOR.plusSeconds(20);
        survivor.await("STUCK ", patience);
        String[] taken = survivor.line("STUCK ").split(" ");
        Duration gap = Duration.ofMillis(Long.parseLong(taken[1]) - Long.parseLong(held[1]));
        Duration atMost = ScheduledJobsApplication.STUCK_LOCK_AT_MOST_FOR;
        assertThat(gap).as("from the killed instance's start of the stuck job to the survivor's (lockAtMostFor %s); %s",
                atMost, outputs()).isGreaterThanOrEqualTo(atMost.minusMillis(250))
                .isLessThanOrEqualTo(atMost.plusSeconds(1).plusMillis(LAG_MILLIS).plusSeconds(2));
        assertThat(Long.parseLong(taken[2])).as("the survivor's fencing token above the killed holder's")
                .isGreaterThan(Long.parseLong(held[2]));

        awaitTrue(Duration.ofSeconds(30), () -> ticks().tailMap(killedSlot, false).size() >= SLOTS_AFTER_THE_KILL);
        survivor.process.destroyForcibly();

        NavigableMap<Long, List<String>> ticks = ticks();
        assertThat(ticks).as("runs of each tick, by scheduled second; %s", outputs())
                .allSatisfy((slot, runs) -> assertThat(runs).as("runs of the tick of second %d", slot).hasSize(1));
        assertThat(ticks.tailMap(bothReadySlot, false)).as("ticks while both ran").hasSizeGreaterThanOrEqualTo(SLOTS_WITH_BOTH);
        assertThat(ticks.tailMap(killedSlot, false).values()).as("ticks after the kill, all on the survivor")
                .allSatisfy(runs -> assertThat(runs.get(0)).startsWith(survivor.name + " "));
        List<Long> tokens = ticks.values().stream().map(runs -> Long.parseLong(runs.get(0).split(" ")[1])).toList();
        assertThat(tokens).as("fencing tokens of the ticks in order").isSorted().doesNotHaveDuplicates();
    }

    /** Every TICK reported by either instance, by slot: {@code "<instance> <token>"} per run. */
    private NavigableMap<Long, List<String>> ticks() throws IOException {
        NavigableMap<Long, List<String>> ticks = new TreeMap<>();
        for (Child child : children) {
            for (String line : child.lines()) {
                if (line.startsWith("TICK ")) {
                    String[] parts = line.split(" ");
                    ticks.computeIfAbsent(Long.parseLong(parts[1]), slot -> new ArrayList<>()).add(child.name + " " + parts[2]);
                }
            }
        }
        return ticks;
    }

    private Child start(Path dir, String name, long lagMillis, Path go) throws IOException {
        Path status = Files.createFile(dir.resolve(name + ".status"));
        Path output = dir.resolve(name + ".log");
        Process process = new ProcessBuilder(ChildJvm.command(ScheduledJobsApplication.class,
                store(), status.toString(), Long.toString(lagMillis), go.toString()))
                .redirectErrorStream(true).redirectOutput(output.toFile()).start();
        Child child = new Child(name, process, status, output);
        children.add(child);
        return child;
    }

    private Child awaitFirst(Duration timeout, Predicate<Child> reported) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (System.nanoTime() - deadline < 0) {
            for (Child child : children) {
                if (reported.test(child)) {
                    return child;
                }
            }
            Thread.sleep(10);
        }
        throw new AssertionError("no instance reported in time; " + outputs());
    }

    private void awaitTrue(Duration timeout, Check check) throws Exception {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!check.holds()) {
            if (System.nanoTime() - deadline > 0) {
                throw new AssertionError("not reached within " + timeout + "; ticks " + ticks() + "; " + outputs());
            }
            Thread.sleep(50);
        }
    }

    private String outputs() {
        StringBuilder all = new StringBuilder("the instances' status and output:");
        children.stream().sorted(Comparator.comparing(child -> child.name)).forEach(child -> all.append("\n--- ")
                .append(child.name).append(" ---\n").append(child.output()));
        return all.toString();
    }

    /** A condition polled by {@link #awaitTrue}. */
    private interface Check {
        boolean holds() throws Exception;
    }

    /** One instance in a child JVM and the files it reports to. */
    private record Child(String name, Process process, Path status, Path outputFile) {

        void await(String prefix, Duration timeout) throws Exception {
            long deadline = System.nanoTime() + timeout.toNanos();
            while (line(prefix) == null) {
                if (System.nanoTime() - deadline > 0 || !process.isAlive() && line(prefix) == null) {
                    throw new AssertionError("instance " + name + " never reported '" + prefix + "'; its status and output:\n"
                            + output());
                }
                Thread.sleep(10);
            }
        }

        /** The first whole line starting with {@code prefix}, or null. */
        String line(String prefix) {
            try {
                return lines().stream().filter(line -> line.startsWith(prefix)).findFirst().orElse(null);
            } catch (IOException e) {
                return null;
            }
        }

        /** The whole lines reported so far (a write may be seen half done). */
        List<String> lines() throws IOException {
            String reported = Files.readString(status, StandardCharsets.UTF_8);
            return reported.substring(0, reported.lastIndexOf('\n') + 1).lines().toList();
        }

        String output() {
            try {
                return Files.readString(status, StandardCharsets.UTF_8) + "--- output ---\n"
                        + Files.readString(outputFile, StandardCharsets.UTF_8);
            } catch (IOException e) {
                return "(unreadable: " + e + ")";
            }
        }
    }
}
