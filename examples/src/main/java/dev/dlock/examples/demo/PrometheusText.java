package dev.dlock.examples.demo;

import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads samples out of a Prometheus text scrape ({@code /actuator/prometheus}). */
final class PrometheusText {

    private static final Pattern SAMPLE = Pattern.compile("^([a-zA-Z_:][a-zA-Z0-9_:]*)(\\{[^}]*})?\\s+(\\S+)");

    /** One sample line: metric name, the label block as written (may be empty), value. */
    record Sample(String name, String labels, double value) {
    }

    private PrometheusText() {
    }

    /** Every sample of the scrape. */
    static List<Sample> samples(String scrape) {
        List<Sample> samples = new ArrayList<>();
        for (String line : scrape.split("\n")) {
            if (line.startsWith("#")) {
                continue;
            }
            Matcher m = SAMPLE.matcher(line);
            if (m.find()) {
                samples.add(new Sample(m.group(1), m.group(2) == null ? "" : m.group(2), Double.parseDouble(m.group(3))));
            }
        }
        return samples;
    }

    /** The sum of {@code metric}'s samples whose labels contain {@code labelFilter} (e.g. {@code result="renewed"}). */
    static double sum(String scrape, String metric, String labelFilter) {
        return samples(scrape).stream()
                .filter(s -> s.name().equals(metric) && s.labels().contains(labelFilter))
                .mapToDouble(Sample::value).sum();
    }
}
