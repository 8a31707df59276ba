package dev.dlock.testkit.faults;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * What a fault-suite run showed: the referee's score, every fault injected with the time the workload
 * took to complete a section after it, and the locks still held once the workers had stopped.
 */
public record FaultReport(String store, long seed, Duration duration, int jvms, int threadsPerJvm, int hotKeys,
                          int coldKeys, Duration leaseTime, Score score, List<InjectedFault> faults, int locksLeftHeld) {

    /**
     * The referee's counts.
     *
     * @param sections critical sections completed (entered, released, reported)
     * @param wallClockOverlaps sections that entered a key while another section was still inside it
     * @param letThrough writes the fencing check accepted although another acquisition held the same token (must be 0)
     * @param staleRefused writes refused because a newer token had been accepted for the key
     * @param lossesHappened completed sections that were overtaken (overlapped, or a write refused)
     * @param lossesReported of those, the ones whose release told the holder its lease was lost
     * @param silentLosses the others, described (must be empty)
     * @param falseAlarms sections reported lost although nothing overtook them (a lease that ran out unseen)
     * @param errors acquire and release errors by kind
     */
    public record Score(long sections, long wallClockOverlaps, long letThrough, long staleRefused, long lossesHappened,
                        long lossesReported, List<String> silentLosses, long falseAlarms, Map<String, Long> errors) {
    }

    /**
     * One fault as injected.
     *
     * @param recoveredAfter from the end of the fault to the first section completed after it; null when none was
     */
    public record InjectedFault(String name, Duration at, Duration lasted, Duration recoveredAfter, String detail) {
    }

    /** The report as a markdown section. */
    public String toMarkdown() {
        StringBuilder md = new StringBuilder();
        md.append("### ").append(store).append(" — seed ").append(seed).append(", ").append(duration.toSeconds()).append(" s, ")
                .append(jvms).append(" JVMs × ").append(threadsPerJvm).append(" threads, ").append(hotKeys).append(" hot + ")
                .append(coldKeys).append(" cold keys, lease ").append(leaseTime.toMillis()).append(" ms\n\n");
        md.append("| figure | value |\n|---|---:|\n");
        row(md, "critical sections completed", score.sections());
        row(md, "overlaps seen by wall clock (entries into a key another section was inside)", score.wallClockOverlaps());
        row(md, "overlaps the fencing referee let through", score.letThrough());
        row(md, "stale writes the referee refused", score.staleRefused());
        row(md, "leases lost (sections overtaken)", score.lossesHappened());
        row(md, "of those, reported to the holder", score.lossesReported());
        row(md, "silent losses", score.silentLosses().size());
        row(md, "losses reported with no overtaking", score.falseAlarms());
        row(md, "locks left held after the run", locksLeftHeld);
        score.errors().forEach((kind, count) -> row(md, "errors: " + kind, count));
        md.append("\n| fault | at | lasted | first section completed after | detail |\n|---|---:|---:|---:|---|\n");
        for (InjectedFault fault : faults) {
            md.append("| ").append(fault.name()).append(" | ").append(seconds(fault.at())).append(" | ")
                    .append(seconds(fault.lasted())).append(" | ")
                    .append(fault.recoveredAfter() == null ? "—" : fault.recoveredAfter().toMillis() + " ms").append(" | ")
                    .append(fault.detail()).append(" |\n");
        }
        return md.toString();
    }

    /** The report as JSON. */
    public String toJson() {
        String faultsJson = faults.stream().map(f -> "{\"name\":" + quote(f.name()) + ",\"atMillis\":" + f.at().toMillis()
                + ",\"lastedMillis\":" + f.lasted().toMillis() + ",\"recoveredAfterMillis\":"
                + (f.recoveredAfter() == null ? "null" : f.recoveredAfter().toMillis()) + ",\"detail\":" + quote(f.detail()) + "}")
                .collect(Collectors.joining(",", "[", "]"));
        String errorsJson = score.errors().entrySet().stream().map(e -> quote(e.getKey()) + ":" + e.getValue())
                .collect(Collectors.joining(",", "{", "}"));
        String silentJson = score.silentLosses().stream().map(FaultReport::quote).collect(Collectors.joining(",", "[", "]"));
        return "{\"store\":" + quote(store) + ",\"seed\":" + seed + ",\"durationSeconds\":" + duration.toSeconds()
                + ",\"jvms\":" + jvms + ",\"threadsPerJvm\":" + threadsPerJvm + ",\"hotKeys\":" + hotKeys + ",\"coldKeys\":" + coldKeys
                + ",\"leaseMillis\":" + leaseTime.toMillis() + ",\"sections\":" + score.sections()
                + ",\"wallClockOverlaps\":" + score.wallClockOverlaps() + ",\"letThrough\":" + score.letThrough()
                + ",\"staleRefused\":" + score.staleRefused() + ",\"lossesHappened\":" + score.lossesHappened()
                + ",\"lossesReported\":" + score.lossesReported() + ",\"silentLosses\":" + silentJson
                + ",\"falseAlarms\":" + score.falseAlarms() + ",\"locksLeftHeld\":" + locksLeftHeld
                + ",\"errors\":" + errorsJson + ",\"faults\":" + faultsJson + "}";
    }

    /** Writes {@code <name>.md} and {@code <name>.json} into {@code directory}. */
    public void writeTo(Path directory, String name) {
        try {
            Files.createDirectories(directory);
            Files.writeString(directory.resolve(name + ".md"), toMarkdown());
            Files.writeString(directory.resolve(name + ".json"), toJson());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static void row(StringBuilder md, String figure, long value) {
        md.append("| ").append(figure).append(" | ").append(value).append(" |\n");
    }

    private static String seconds(Duration duration) {
        return String.format(java.util.Locale.ROOT, "%.1f s", duration.toMillis() / 1000.0);
    }

    private static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }
}
