package dev.dlock.boot.web;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** Reports, with no exception handler of its own: a busy lock is dlock's to answer. */
@RestController
public class ReportController {

    private final ReportService reports;

    public ReportController(ReportService reports) {
        this.reports = reports;
    }

    @GetMapping("/reports/{id}")
    public String report(@PathVariable String id) {
        return reports.build(id);
    }

    @GetMapping("/reports/{id}/now")
    public String reportNow(@PathVariable String id) {
        return reports.buildNow(id);
    }

    @GetMapping("/reports/{id}/lost")
    public String reportLost(@PathVariable String id) {
        return reports.buildAndLoseTheLease(id);
    }

    @GetMapping("/reactive/reports/{id}")
    public Mono<String> reactiveReport(@PathVariable String id) {
        return reports.buildReactive(id);
    }

    @GetMapping("/reactive/reports/{id}/now")
    public Mono<String> reactiveReportNow(@PathVariable String id) {
        return reports.buildReactiveNow(id);
    }

    @GetMapping("/reactive/reports/{id}/lost")
    public Mono<String> reactiveReportLost(@PathVariable String id) {
        return reports.buildReactiveAndLoseTheLease(id);
    }
}
