package dev.dlock.boot.web;

import dev.dlock.core.LockNotAcquiredException;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.ExceptionHandler;
import org.springframework.web.bind.annotation.RestControllerAdvice;

/** The application's own answer to a busy invoice lock: it must win over dlock's. */
@RestControllerAdvice(assignableTypes = InvoiceController.class)
public class InvoiceAdvice {

    /** The answer the application chose. */
    public static final String BODY = "invoice in progress, see /invoices";

    @ExceptionHandler(LockNotAcquiredException.class)
    public ResponseEntity<String> busy(LockNotAcquiredException e) {
        return ResponseEntity.status(HttpStatus.LOCKED).body(BODY);
    }
}
