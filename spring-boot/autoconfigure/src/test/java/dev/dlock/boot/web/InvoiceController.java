package dev.dlock.boot.web;

import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RestController;
import reactor.core.publisher.Mono;

/** Invoices, whose busy lock the application answers itself ({@link InvoiceAdvice}). */
@RestController
public class InvoiceController {

    private final ReportService reports;

    public InvoiceController(ReportService reports) {
        this.reports = reports;
    }

    @GetMapping("/invoices/{id}")
    public String invoice(@PathVariable String id) {
        return reports.issue(id);
    }

    @GetMapping("/reactive/invoices/{id}")
    public Mono<String> reactiveInvoice(@PathVariable String id) {
        return reports.issueReactive(id);
    }
}
