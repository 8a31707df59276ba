package dev.dlock.boot.metrics;

import io.micrometer.core.instrument.Meter;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.config.MeterFilter;
import io.micrometer.core.instrument.distribution.DistributionStatisticConfig;

import java.util.Map;

/**
 * What dlock's timers get without the application asking, and nothing else: the descriptions of the meters dlock's
 * observations become (a meter observation handler names and tags them but describes none), and percentile histograms
 * for {@link LockMetrics#ACQUIRE} and {@link LockMetrics#HOLD}, so that a dashboard's percentile panels have buckets to
 * read on an application configured as the quick start says (their tags are bounded: lock name, result, error). A
 * histogram setting the application made ({@code management.metrics.distribution.percentiles-histogram.dlock=false},
 * or {@code .all}) wins. Matches dlock's meter names exactly: it changes no other meter, and denies none.
 */
public final class LockMeterDefaults implements MeterFilter {

    private static final Map<String, String> DESCRIPTIONS = Map.of(
            LockMetrics.ACQUIRE, LockMetrics.ACQUIRE_DESCRIPTION,
            LockMetrics.ACQUIRE_ACTIVE, LockMetrics.ACQUIRE_ACTIVE_DESCRIPTION,
            LockMetrics.HOLD, LockMetrics.HOLD_DESCRIPTION,
            LockMetrics.HOLD_ACTIVE, LockMetrics.HOLD_ACTIVE_DESCRIPTION);

    /** Gives dlock's observation meters their descriptions, unless they have one. */
    @Override
    public Meter.Id map(Meter.Id id) {
        String description = DESCRIPTIONS.get(id.getName());
        if (description == null || id.getDescription() != null) {
            return id;
        }
        return new Meter.Id(id.getName(), Tags.of(id.getTags()), id.getBaseUnit(), description, id.getType());
    }

    /** Publishes a percentile histogram of dlock's two timers, unless a histogram setting for them was made. */
    @Override
    public DistributionStatisticConfig configure(Meter.Id id, DistributionStatisticConfig config) {
        boolean dlockTimer = id.getType() == Meter.Type.TIMER
                && (id.getName().equals(LockMetrics.ACQUIRE) || id.getName().equals(LockMetrics.HOLD));
        if (!dlockTimer || config.isPercentileHistogram() != null) {
            return config;
        }
        return DistributionStatisticConfig.builder().percentilesHistogram(true).build().merge(config);
    }
}
