package dev.dlock.boot.web;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.core.LockManager;
import org.springframework.stereotype.Service;
import reactor.core.publisher.Mono;

/** Locked calls, blocking and reactive: with a wait, without one, and one whose lease an operator takes away. */
@Service
public class ReportService {

    /** The lock name of reports. */
    public static final String REPORTS = "reports";
    /** The lock name of invoices, whose controller maps a busy lock itself. */
    public static final String INVOICES = "invoices";

    private final LockManager locks;

    public ReportService(LockManager locks) {
        this.locks = locks;
    }

    @DistributedLock(name = REPORTS, key = "#id", waitTime = "300ms")
    public String build(String id) {
        return "report " + id;
    }

    @DistributedLock(name = REPORTS, key = "#id", waitTime = "0")
    public String buildNow(String id) {
        return "report " + id;
    }

    /** Its lease is taken by a forced release while it runs: its release reports the loss. */
    @DistributedLock(name = REPORTS, key = "#id", waitTime = "0")
    public String buildAndLoseTheLease(String id) {
        locks.admin().forceRelease(REPORTS, REPORTS + ":" + id);
        return "report " + id;
    }

    @DistributedLock(name = REPORTS, key = "#id", waitTime = "300ms")
    public Mono<String> buildReactive(String id) {
        return Mono.just("report " + id);
    }

    @DistributedLock(name = REPORTS, key = "#id", waitTime = "0")
    public Mono<String> buildReactiveNow(String id) {
        return Mono.just("report " + id);
    }

    @DistributedLock(name = REPORTS, key = "#id", waitTime = "0")
    public Mono<String> buildReactiveAndLoseTheLease(String id) {
        locks.admin().forceRelease(REPORTS, REPORTS + ":" + id);
        return Mono.just("report " + id);
    }

    @DistributedLock(name = INVOICES, key = "#id", waitTime = "0")
    public String issue(String id) {
        return "invoice " + id;
    }

    @DistributedLock(name = INVOICES, key = "#id", waitTime = "0")
    public Mono<String> issueReactive(String id) {
        return Mono.just("invoice " + id);
    }
}
