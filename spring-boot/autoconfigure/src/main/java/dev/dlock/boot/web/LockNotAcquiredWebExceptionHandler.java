package dev.dlock.boot.web;

import dev.dlock.core.LockNotAcquiredException;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.codec.HttpMessageWriter;
import org.springframework.http.codec.ServerCodecConfigurer;
import org.springframework.web.reactive.function.server.ServerResponse;
import org.springframework.web.reactive.result.view.ViewResolver;
import org.springframework.web.server.ServerWebExchange;
import org.springframework.web.server.WebExceptionHandler;
import reactor.core.publisher.Mono;

import java.util.List;
import java.util.Objects;

/**
 * Spring WebFlux: a {@link LockNotAcquiredException} that no {@code @ExceptionHandler} of the application took answers
 * {@code 409 Conflict} as a problem detail ({@link LockNotAcquiredProblems}), logged at DEBUG, instead of a 500 logged
 * at ERROR. Exception handlers of controllers and {@code @ControllerAdvice} run before any {@code WebExceptionHandler};
 * this one runs just before Spring Boot's error handler ({@value #ORDER}, Boot's is -1), so an application's own
 * {@code WebExceptionHandler} for it needs an order below that.
 */
public class LockNotAcquiredWebExceptionHandler implements WebExceptionHandler, org.springframework.core.Ordered {

    /** Just before Spring Boot's {@code ErrorWebExceptionHandler} (order -1), which would answer 500. */
    public static final int ORDER = -2;

    private static final Logger log = LoggerFactory.getLogger(LockNotAcquiredWebExceptionHandler.class);

    private final LockNotAcquiredProblems problems;
    private final ServerResponse.Context context;

    /** Writes {@code problems}' answers with the application's {@code codecs}. */
    public LockNotAcquiredWebExceptionHandler(LockNotAcquiredProblems problems, ServerCodecConfigurer codecs) {
        this.problems = Objects.requireNonNull(problems, "problems");
        List<HttpMessageWriter<?>> writers = codecs.getWriters();
        this.context = new ServerResponse.Context() {
            @Override
            public List<HttpMessageWriter<?>> messageWriters() {
                return writers;
            }

            @Override
            public List<ViewResolver> viewResolvers() {
                return List.of();
            }
        };
    }

    @Override
    public Mono<Void> handle(ServerWebExchange exchange, Throwable ex) {
        LockNotAcquiredException notAcquired = LockNotAcquiredProblems.find(ex);
        if (notAcquired == null || exchange.getResponse().isCommitted()) {
            return Mono.error(ex);
        }
        String path = exchange.getRequest().getPath().value();
        log.debug("dlock: {} {} answered 409 Conflict: {}", exchange.getRequest().getMethod(), path, notAcquired.getMessage());
        return ServerResponse.status(HttpStatus.CONFLICT)
                .contentType(MediaType.APPLICATION_PROBLEM_JSON)
                .headers(headers -> problems.retryAfterSeconds(notAcquired)
                        .ifPresent(seconds -> headers.set(HttpHeaders.RETRY_AFTER, Long.toString(seconds))))
                .bodyValue(problems.problem(notAcquired, path))
                .flatMap(response -> response.writeTo(exchange, context));
    }

    @Override
    public int getOrder() {
        return ORDER;
    }
}
