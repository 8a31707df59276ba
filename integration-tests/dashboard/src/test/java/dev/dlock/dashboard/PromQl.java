package dev.dlock.dashboard;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.function.BinaryOperator;
import java.util.regex.Pattern;

/**
 * The dashboard's queries evaluated as a Prometheus server would, over two scrapes of {@code /actuator/prometheus}
 * taken {@code seconds} apart, at the time of the second: selectors with {@code =} and {@code =~} matchers (the
 * server's own {@code instance} and {@code job} labels added to every series), {@code rate} and {@code increase} over a
 * range, {@code sum by} and {@code max by}, {@code topk}, {@code histogram_quantile}, division, and Grafana's
 * {@code label_values}. A query that uses anything else fails, so a panel this cannot check is noticed.
 */
final class PromQl {

    /** One series' value: its labels (the metric name under {@code __name__}) and its sample. */
    record Sample(Map<String, String> labels, double value) {
    }

    private static final String NAME = "__name__";

    private final List<Sample> before;
    private final List<Sample> after;
    private final double seconds;
    private String query;
    private int at;

    /** Evaluates queries over the scrape {@code before} and the one {@code seconds} later, {@code after}. */
    PromQl(List<Sample> before, List<Sample> after, double seconds) {
        this.before = before;
        this.after = after;
        this.seconds = seconds;
    }

    /** The samples of a scrape in Prometheus' text format, each with the labels the server adds for its target. */
    static List<Sample> scrape(String text, Map<String, String> targetLabels) {
        List<Sample> samples = new ArrayList<>();
        for (String line : text.split("\n")) {
            if (line.isBlank() || line.startsWith("#")) {
                continue;
            }
            PromQl reader = new PromQl(List.of(), List.of(), 0);
            reader.query = line;
            Map<String, String> labels = new TreeMap<>(targetLabels);
            labels.put(NAME, reader.identifier());
            if (reader.peek('{')) {
                labels.putAll(reader.labels((key, op, value) -> true).labels());
            }
            String[] rest = line.substring(reader.at).trim().split(" ");
            samples.add(new Sample(labels, Double.parseDouble(rest[0].replace("Inf", "Infinity"))));
        }
        return samples;
    }

    /** The result of {@code query}, with Grafana's variables set as for "All" instances. */
    List<Sample> evaluate(String grafanaQuery) {
        query = grafanaQuery.replace("$__rate_interval", "1m").replace("$instance", ".*");
        at = 0;
        List<Sample> result = query.startsWith("label_values(") ? labelValues() : expression();
        skipSpaces();
        if (at != query.length()) {
            throw new IllegalArgumentException("cannot evaluate '" + query + "' past position " + at);
        }
        return result;
    }

    private List<Sample> labelValues() {
        at = "label_values(".length();
        List<Sample> series = selector(after);
        expect(',');
        String label = identifier();
        expect(')');
        Set<String> values = new TreeSet<>();
        series.forEach(sample -> values.add(sample.labels().getOrDefault(label, "")));
        return values.stream().map(value -> new Sample(Map.of(label, value), 1)).toList();
    }

    private List<Sample> expression() {
        List<Sample> left = term();
        while (peek('/')) {
            expect('/');
            Map<Map<String, String>, Double> right = new LinkedHashMap<>();
            term().forEach(sample -> right.put(withoutName(sample.labels()), sample.value()));
            List<Sample> quotient = new ArrayList<>();
            for (Sample sample : left) {
                Double divisor = right.get(withoutName(sample.labels()));
                if (divisor != null) {
                    quotient.add(new Sample(withoutName(sample.labels()), sample.value() / divisor));
                }
            }
            left = quotient;
        }
        return left;
    }

    private List<Sample> term() {
        String word = identifier();
        switch (word) {
            case "sum", "max" -> {
                List<String> by = by();
                expect('(');
                List<Sample> inner = expression();
                expect(')');
                return aggregate(inner, by, word.equals("sum") ? Double::sum : Math::max);
            }
            case "rate", "increase" -> {
                expect('(');
                List<Sample> increases = increases();
                expect(')');
                return word.equals("rate")
                        ? increases.stream().map(sample -> new Sample(sample.labels(), sample.value() / seconds)).toList()
                        : increases;
            }
            case "topk" -> {
                expect('(');
                int k = (int) number();
                expect(',');
                List<Sample> inner = expression();
                expect(')');
                return inner.stream().sorted(Comparator.comparingDouble(Sample::value).reversed()).limit(k).toList();
            }
            case "histogram_quantile" -> {
                expect('(');
                double quantile = number();
                expect(',');
                List<Sample> buckets = expression();
                expect(')');
                return quantiles(quantile, buckets);
            }
            default -> {
                at -= word.length();
                return selector(after);
            }
        }
    }

    /** {@code name{matchers}[range]}: each series' increase between the scrapes (a counter reset counts from 0). */
    private List<Sample> increases() {
        int start = at;
        List<Sample> now = selector(after);
        at = start;
        Map<Map<String, String>, Double> then = new LinkedHashMap<>();
        selector(before).forEach(sample -> then.put(sample.labels(), sample.value()));
        expect('[');
        while (query.charAt(at) != ']') {
            at++;
        }
        expect(']');
        List<Sample> increases = new ArrayList<>();
        for (Sample sample : now) {
            Double earlier = then.get(sample.labels());
            // A series needs two samples in the range.
            if (earlier != null) {
                double increase = sample.value() >= earlier ? sample.value() - earlier : sample.value();
                increases.add(new Sample(withoutName(sample.labels()), increase));
            }
        }
        return increases;
    }

    private List<Sample> selector(List<Sample> scrape) {
        String name = identifier();
        List<Matcher> matchers = new ArrayList<>();
        if (peek('{')) {
            labels((key, op, value) -> matchers.add(new Matcher(key, op, value)));
        }
        return scrape.stream().filter(sample -> name.equals(sample.labels().get(NAME))
                && matchers.stream().allMatch(matcher -> matcher.matches(sample.labels()))).toList();
    }

    private record Matcher(String label, String op, String value) {
        boolean matches(Map<String, String> labels) {
            String actual = labels.getOrDefault(label, "");
            return op.equals("=") ? actual.equals(value) : Pattern.matches(value, actual);
        }
    }

    private interface LabelSink {
        boolean accept(String key, String op, String value);
    }

    /** Reads {@code {key="value", key=~"regex"}}, handing each to {@code sink}; the labels read, as a sample. */
    private Sample labels(LabelSink sink) {
        expect('{');
        Map<String, String> labels = new TreeMap<>();
        while (!peek('}')) {
            String key = identifier();
            skipSpaces();
            String op = query.startsWith("=~", at) ? "=~" : "=";
            at += op.length();
            String value = string();
            labels.put(key, value);
            sink.accept(key, op, value);
            if (peek(',')) {
                expect(',');
            }
        }
        expect('}');
        return new Sample(labels, 0);
    }

    private List<String> by() {
        List<String> labels = new ArrayList<>();
        skipSpaces();
        if (query.startsWith("by", at)) {
            at += 2;
            expect('(');
            while (!peek(')')) {
                labels.add(identifier());
                if (peek(',')) {
                    expect(',');
                }
            }
            expect(')');
        }
        return labels;
    }

    private static List<Sample> aggregate(List<Sample> samples, List<String> by, BinaryOperator<Double> combine) {
        Map<Map<String, String>, Double> groups = new LinkedHashMap<>();
        for (Sample sample : samples) {
            Map<String, String> group = new TreeMap<>();
            by.forEach(label -> group.put(label, sample.labels().getOrDefault(label, "")));
            groups.merge(group, sample.value(), combine);
        }
        return groups.entrySet().stream().map(entry -> new Sample(entry.getKey(), entry.getValue())).toList();
    }

    /** Prometheus' histogram_quantile: per series (all labels but {@code le}), interpolated within the bucket that holds the rank. */
    private static List<Sample> quantiles(double quantile, List<Sample> buckets) {
        Map<Map<String, String>, TreeMap<Double, Double>> bySeries = new LinkedHashMap<>();
        for (Sample bucket : buckets) {
            Map<String, String> series = new TreeMap<>(bucket.labels());
            double upperBound = Double.parseDouble(series.remove("le").replace("Inf", "Infinity"));
            bySeries.computeIfAbsent(series, s -> new TreeMap<>()).merge(upperBound, bucket.value(), Double::sum);
        }
        List<Sample> result = new ArrayList<>();
        bySeries.forEach((series, counts) -> result.add(new Sample(series, quantile(quantile, counts))));
        return result;
    }

    private static double quantile(double quantile, TreeMap<Double, Double> counts) {
        double total = counts.lastEntry().getValue();
        if (!counts.lastKey().isInfinite() || total == 0) {
            return Double.NaN;
        }
        double rank = quantile * total;
        double lowerBound = 0;
        double below = 0;
        for (Map.Entry<Double, Double> bucket : counts.entrySet()) {
            if (bucket.getValue() >= rank) {
                if (bucket.getKey().isInfinite()) {
                    return lowerBound;
                }
                double inBucket = bucket.getValue() - below;
                return lowerBound + (bucket.getKey() - lowerBound) * (inBucket == 0 ? 0 : (rank - below) / inBucket);
            }
            lowerBound = bucket.getKey();
            below = bucket.getValue();
        }
        return Double.NaN;
    }

    private static Map<String, String> withoutName(Map<String, String> labels) {
        Map<String, String> copy = new TreeMap<>(labels);
        copy.remove(NAME);
        return copy;
    }

    private String identifier() {
        skipSpaces();
        int start = at;
        while (at < query.length() && (Character.isLetterOrDigit(query.charAt(at)) || query.charAt(at) == '_' || query.charAt(at) == ':')) {
            at++;
        }
        if (start == at) {
            throw new IllegalArgumentException("a name expected at position " + at + " of '" + query + "'");
        }
        return query.substring(start, at);
    }

    private double number() {
        skipSpaces();
        int start = at;
        while (at < query.length() && ("0123456789.eE+-".indexOf(query.charAt(at)) >= 0)) {
            at++;
        }
        return Double.parseDouble(query.substring(start, at));
    }

    private String string() {
        expect('"');
        StringBuilder value = new StringBuilder();
        while (query.charAt(at) != '"') {
            char c = query.charAt(at++);
            if (c == '\\') {
                char escaped = query.charAt(at++);
                value.append(escaped == 'n' ? '\n' : escaped);
            } else {
                value.append(c);
            }
        }
        at++;
        return value.toString();
    }

    private boolean peek(char c) {
        skipSpaces();
        return at < query.length() && query.charAt(at) == c;
    }

    private void expect(char c) {
        if (!peek(c)) {
            throw new IllegalArgumentException("'" + c + "' expected at position " + at + " of '" + query + "'");
        }
        at++;
    }

    private void skipSpaces() {
        while (at < query.length() && query.charAt(at) == ' ') {
            at++;
        }
    }
}
