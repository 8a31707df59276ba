package dev.dlock.boot.web;

import dev.dlock.core.LockNotAcquiredException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.core.Ordered;
import org.springframework.http.HttpHeaders;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ProblemDetail;
import org.springframework.http.converter.HttpMessageConverter;
import org.springframework.http.server.ServletServerHttpResponse;
import org.springframework.web.servlet.HandlerExceptionResolver;
import org.springframework.web.servlet.ModelAndView;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;

import java.io.IOException;
import java.util.Objects;

/**
 * Spring MVC: a {@link LockNotAcquiredException} that no handler of the application took answers {@code 409 Conflict}
 * as a problem detail ({@link LockNotAcquiredProblems}), logged at DEBUG, instead of a 500 logged at ERROR. It runs
 * last ({@link Ordered#LOWEST_PRECEDENCE}, after Spring's resolvers): every {@code @ExceptionHandler} of a controller
 * or {@code @ControllerAdvice} has had its chance, and wins.
 */
public class LockNotAcquiredExceptionResolver implements HandlerExceptionResolver, Ordered {

    private static final Logger log = LoggerFactory.getLogger(LockNotAcquiredExceptionResolver.class);

    private final LockNotAcquiredProblems problems;
    private final ObjectProvider<RequestMappingHandlerAdapter> adapters;

    /** Writes {@code problems}' answers with the message converters of the application's MVC ({@code adapters}). */
    public LockNotAcquiredExceptionResolver(LockNotAcquiredProblems problems, ObjectProvider<RequestMappingHandlerAdapter> adapters) {
        this.problems = Objects.requireNonNull(problems, "problems");
        this.adapters = Objects.requireNonNull(adapters, "adapters");
    }

    @Override
    public ModelAndView resolveException(HttpServletRequest request, HttpServletResponse response, Object handler, Exception ex) {
        LockNotAcquiredException notAcquired = LockNotAcquiredProblems.find(ex);
        if (notAcquired == null || response.isCommitted()) {
            return null;
        }
        log.debug("dlock: {} {} answered 409 Conflict: {}", request.getMethod(), request.getRequestURI(), notAcquired.getMessage());
        ProblemDetail problem = problems.problem(notAcquired, request.getRequestURI());
        problems.retryAfterSeconds(notAcquired).ifPresent(seconds -> response.setHeader(HttpHeaders.RETRY_AFTER, Long.toString(seconds)));
        try {
            HttpMessageConverter<Object> converter = problemConverter();
            if (converter == null) {
                // No JSON converter: Boot's error page still answers 409, with the detail as its message.
                response.sendError(HttpStatus.CONFLICT.value(), problem.getDetail());
            } else {
                response.setStatus(HttpStatus.CONFLICT.value());
                converter.write(problem, MediaType.APPLICATION_PROBLEM_JSON, new ServletServerHttpResponse(response));
            }
        } catch (IOException e) {
            log.debug("dlock: could not write the 409 answer to {} {}", request.getMethod(), request.getRequestURI(), e);
        }
        return new ModelAndView();
    }

    @SuppressWarnings("unchecked")
    private HttpMessageConverter<Object> problemConverter() {
        RequestMappingHandlerAdapter adapter = adapters.getIfUnique();
        if (adapter == null) {
            return null;
        }
        for (HttpMessageConverter<?> converter : adapter.getMessageConverters()) {
            if (converter.canWrite(ProblemDetail.class, MediaType.APPLICATION_PROBLEM_JSON)) {
                return (HttpMessageConverter<Object>) converter;
            }
        }
        return null;
    }

    /** Last among the resolvers, after every {@code @ExceptionHandler}. */
    @Override
    public int getOrder() {
        return Ordered.LOWEST_PRECEDENCE;
    }
}
