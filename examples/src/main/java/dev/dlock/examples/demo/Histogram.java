package dev.dlock.examples.demo;

import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * Cumulative histogram buckets summed over scrapes of several instances, with the same linear
 * interpolation as PromQL's {@code histogram_quantile}.
 */
final class Histogram {

    private static final Pattern LE = Pattern.compile("le=\"([^\"]+)\"");

    private final TreeMap<Double, Double> cumulative = new TreeMap<>();

    /** Adds the buckets of {@code bucketMetric} whose labels contain {@code labelFilter}. */
    void add(String scrape, String bucketMetric, String labelFilter) {
        for (PrometheusText.Sample sample : PrometheusText.samples(scrape)) {
            if (sample.name().equals(bucketMetric) && sample.labels().contains(labelFilter)) {
                Matcher le = LE.matcher(sample.labels());
                if (le.find()) {
                    double bound = le.group(1).equals("+Inf") ? Double.POSITIVE_INFINITY : Double.parseDouble(le.group(1));
                    cumulative.merge(bound, sample.value(), Double::sum);
                }
            }
        }
    }

    /** The {@code q}-quantile in the buckets' unit; 0 when there are no observations. */
    double quantile(double q) {
        if (cumulative.isEmpty()) {
            return 0;
        }
        double total = cumulative.lastEntry().getValue();
        if (total == 0) {
            return 0;
        }
        double rank = q * total;
        double lowerBound = 0;
        double lowerCount = 0;
        for (Map.Entry<Double, Double> bucket : cumulative.entrySet()) {
            if (bucket.getValue() >= rank) {
                if (bucket.getKey().isInfinite()) {
                    return lowerBound;
                }
                double inBucket = bucket.getValue() - lowerCount;
                return inBucket == 0 ? bucket.getKey()
                        : lowerBound + (bucket.getKey() - lowerBound) * (rank - lowerCount) / inBucket;
            }
            lowerBound = bucket.getKey();
            lowerCount = bucket.getValue();
        }
        return lowerBound;
    }
}
