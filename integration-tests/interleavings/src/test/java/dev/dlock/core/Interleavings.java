package dev.dlock.core;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.Arrays;
import java.util.List;

import org.jetbrains.kotlinx.lincheck.Actor;
import org.jetbrains.kotlinx.lincheck.ExceptionResult;
import org.jetbrains.kotlinx.lincheck.LinChecker;
import org.jetbrains.kotlinx.lincheck.Result;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionResult;
import org.jetbrains.kotlinx.lincheck.execution.ExecutionScenario;
import org.jetbrains.kotlinx.lincheck.execution.ResultWithClock;
import org.jetbrains.kotlinx.lincheck.strategy.managed.modelchecking.ModelCheckingOptions;
import org.jetbrains.kotlinx.lincheck.verifier.Verifier;

/**
 * What the model-checking tests of {@link HandOffModel} share: building scenarios from its operations, running one
 * through a budget of interleavings, and the verifier. {@code -Ddlock.interleavings.scale=N} multiplies every budget for
 * a deeper run; the surefire configuration of this module carries the JVM flags Lincheck needs.
 */
public final class Interleavings {

    static final int SCALE = Integer.getInteger("dlock.interleavings.scale", 1);

    private Interleavings() {
    }

    /**
     * A scenario: {@code holdKey} first; then each operation on a thread of its own; then, once all of them finished,
     * the old holder's {@code releaseKey}.
     */
    static ExecutionScenario heldKeyReleasedAfter(String... parallel) {
        return new ExecutionScenario(List.of(actor("holdKey")),
                Arrays.stream(parallel).map(operation -> List.of(actor(operation))).toList(),
                List.of(actor("releaseKey")), null);
    }

    /**
     * Runs each of {@code scenarios} through up to {@code budget} (times the scale) interleavings, in one run of the
     * checker: each run first re-instruments every loaded class (about 7 s), so small budgets share one.
     */
    static void explore(int budget, ExecutionScenario... scenarios) {
        int invocations = budget * SCALE;
        HandOffModel.startCounting();
        ModelCheckingOptions options = options().iterations(0).invocationsPerIteration(invocations);
        for (ExecutionScenario scenario : scenarios) {
            options.addCustomScenario(scenario);
        }
        LinChecker.check(HandOffModel.class, options);
        assertRan(invocations * scenarios.length);
    }

    /** Guards against a vacuous pass: Lincheck that cannot instrument the classes (a JDK too new for it) runs almost nothing. */
    static void assertRan(int invocations) {
        assertThat(HandOffModel.madeSinceCounting()).as("interleavings the model checker ran").isGreaterThanOrEqualTo(invocations);
    }

    /** The options every scenario runs with: no actors before or after, no shrinking, any outcome but an exception. */
    static ModelCheckingOptions options() {
        return new ModelCheckingOptions()
                .actorsBefore(0)
                .actorsAfter(0)
                // The scenarios are small already; shrinking them only costs time.
                .minimizeFailedScenario(false)
                .verifier(NoExceptionVerifier.class);
    }

    /** A scenario: {@code initial} runs first on thread 1, then each of {@code threads} on a thread of its own. */
    @SafeVarargs
    static ExecutionScenario scenario(List<Actor> initial, List<Actor>... threads) {
        return new ExecutionScenario(initial, Arrays.asList(threads), List.of(), null);
    }

    /** The model's operation of that name, as a Lincheck actor. */
    static Actor actor(String operation) {
        try {
            Method method = HandOffModel.class.getMethod(operation);
            return new Actor(method, List.of());
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException("no operation " + operation + " in " + HandOffModel.class.getSimpleName(), e);
        }
    }

    /**
     * Accepts any outcome of the operations (held, aborted, interrupted, busy are all legal) except an exception:
     * what must hold is checked by {@link HandOffModel#settled()} and by Lincheck's hang detection, not by comparing
     * results with a sequential run.
     */
    public static final class NoExceptionVerifier implements Verifier {

        /** Lincheck's contract: every verifier takes the sequential specification, unused here. */
        public NoExceptionVerifier(Class<?> sequentialSpecification) {
        }

        @Override
        public boolean verifyResults(ExecutionScenario scenario, ExecutionResult results) {
            boolean parallelClean = results.getParallelResultsWithClock().stream()
                    .flatMap(List::stream)
                    .map(ResultWithClock::getResult)
                    .noneMatch(ExceptionResult.class::isInstance);
            return parallelClean && clean(results.getInitResults()) && clean(results.getPostResults());
        }

        private static boolean clean(List<Result> part) {
            return part.stream().noneMatch(ExceptionResult.class::isInstance);
        }
    }
}
