package dev.dlock.boot;

import org.springframework.boot.diagnostics.AbstractFailureAnalyzer;
import org.springframework.boot.diagnostics.FailureAnalysis;

/**
 * Spring Boot's failure report for a start that dlock stopped: the {@link DistributedLockStartupException}'s
 * description and action, wherever it sits in the chain of causes (a store built while Spring sorts
 * the aspect's advisors puts it several causes below "Advisor sorting failed"). Registered in
 * META-INF/spring.factories; the same class serves Boot 3.5 and 4.1, whose diagnostics API is the same.
 */
class DistributedLockFailureAnalyzer extends AbstractFailureAnalyzer<DistributedLockStartupException> {

    @Override
    protected FailureAnalysis analyze(Throwable rootFailure, DistributedLockStartupException cause) {
        return new FailureAnalysis(cause.getDescription(), cause.getAction(), cause);
    }
}
