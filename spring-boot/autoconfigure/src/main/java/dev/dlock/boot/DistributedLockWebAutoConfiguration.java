package dev.dlock.boot;

import dev.dlock.boot.web.LockNotAcquiredExceptionResolver;
import dev.dlock.boot.web.LockNotAcquiredProblems;
import dev.dlock.boot.web.LockNotAcquiredWebExceptionHandler;
import dev.dlock.core.LockManager;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnWebApplication;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.http.ProblemDetail;
import org.springframework.http.codec.ServerCodecConfigurer;
import org.springframework.web.reactive.DispatcherHandler;
import org.springframework.web.servlet.DispatcherServlet;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerAdapter;

/**
 * A busy lock is the client's to retry, not a server error: in a Spring MVC or WebFlux application, a
 * {@code LockNotAcquiredException} that no exception handler of the application took answers {@code 409 Conflict} as a
 * problem detail naming the lock, logged at DEBUG. Off with {@code dlock.web.problem-details.enabled=false}; a lost
 * lease ({@code LockLostException}) is left to the application (a 500 by default).
 */
@AutoConfiguration(after = DistributedLockAutoConfiguration.class)
@ConditionalOnWebApplication
@ConditionalOnClass(ProblemDetail.class)
@ConditionalOnBean(LockManager.class)
@ConditionalOnBooleanProperty(name = DistributedLockProperties.PREFIX + ".web.problem-details.enabled", matchIfMissing = true)
public class DistributedLockWebAutoConfiguration {

    /** The answers, with the key only when {@code dlock.web.problem-details.include-key}. */
    @Bean
    @ConditionalOnMissingBean
    public LockNotAcquiredProblems dlockLockNotAcquiredProblems(DistributedLockProperties properties) {
        return new LockNotAcquiredProblems(properties.getWeb().getProblemDetails().isIncludeKey());
    }

    /** Spring MVC: a resolver that runs after every {@code @ExceptionHandler}. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.SERVLET)
    @ConditionalOnClass(DispatcherServlet.class)
    static class ServletProblemDetails {

        @Bean
        @ConditionalOnMissingBean
        LockNotAcquiredExceptionResolver dlockLockNotAcquiredExceptionResolver(LockNotAcquiredProblems problems,
                                                                               ObjectProvider<RequestMappingHandlerAdapter> adapters) {
            return new LockNotAcquiredExceptionResolver(problems, adapters);
        }
    }

    /** Spring WebFlux: an exception handler just before Spring Boot's error handler. */
    @Configuration(proxyBeanMethods = false)
    @ConditionalOnWebApplication(type = ConditionalOnWebApplication.Type.REACTIVE)
    @ConditionalOnClass(DispatcherHandler.class)
    static class ReactiveProblemDetails {

        @Bean
        @ConditionalOnMissingBean
        LockNotAcquiredWebExceptionHandler dlockLockNotAcquiredWebExceptionHandler(LockNotAcquiredProblems problems,
                                                                                   ObjectProvider<ServerCodecConfigurer> codecs) {
            return new LockNotAcquiredWebExceptionHandler(problems, codecs.getIfAvailable(ServerCodecConfigurer::create));
        }
    }
}
