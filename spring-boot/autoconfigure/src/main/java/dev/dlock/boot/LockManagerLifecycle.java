package dev.dlock.boot;

import dev.dlock.core.LockManager;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.BeansException;
import org.springframework.beans.factory.ListableBeanFactory;
import org.springframework.beans.factory.config.SingletonBeanRegistry;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.context.ApplicationListener;
import org.springframework.context.SmartLifecycle;
import org.springframework.context.event.ContextClosedEvent;

/**
 * Closes the application's lock managers when the context closes, at {@link #PHASE}: after the web server drained its
 * requests and stopped, after Spring's task executors and schedulers finished their running tasks, and before any bean
 * is destroyed, so the store clients (JedisPool, CuratorFramework, DataSource) are still open while each manager waits
 * for the holds still running ({@code dlock.shutdown.grace-period}) and releases what is left. Only a closing context
 * closes them: a {@code stop()} of a running context (a checkpoint, say) leaves them alone. A manager the context has not
 * created (a lazy bean) is not created for it.
 */
public class LockManagerLifecycle implements SmartLifecycle, ApplicationListener<ContextClosedEvent>, ApplicationContextAware {

    /**
     * The stop phase: {@code Integer.MAX_VALUE / 2 - 1024}. Higher phases stop first: Boot's graceful web shutdown
     * ({@code Integer.MAX_VALUE - 1024}) and the web server ({@code Integer.MAX_VALUE - 2048}), then Spring's task
     * executors and schedulers ({@code Integer.MAX_VALUE / 2}), then this; lifecycle beans of phase 0 (Spring Data's
     * connection factories) after it, and every bean's destruction after all phases.
     */
    public static final int PHASE = Integer.MAX_VALUE / 2 - 1024;

    private static final Logger log = LoggerFactory.getLogger(LockManagerLifecycle.class);

    private ApplicationContext context;
    private volatile boolean running;
    private volatile boolean closing;

    /** Receives the context whose closing is awaited (a child context's close is not this one's). */
    @Override
    public void setApplicationContext(ApplicationContext context) throws BeansException {
        this.context = context;
    }

    /** The context is closing: its lifecycle stop follows, and this one then closes the managers. */
    @Override
    public void onApplicationEvent(ContextClosedEvent event) {
        if (event.getApplicationContext() == context) {
            closing = true;
        }
    }

    @Override
    public void start() {
        running = true;
    }

    /** Closes every lock manager of the context, each with its own grace period, when the context is closing. */
    @Override
    public void stop() {
        running = false;
        if (!closing) {
            return;
        }
        ListableBeanFactory beans = context;
        SingletonBeanRegistry singletons = context.getAutowireCapableBeanFactory() instanceof SingletonBeanRegistry registry
                ? registry : null;
        for (String name : beans.getBeanNamesForType(LockManager.class, false, false)) {
            if (singletons != null && !singletons.containsSingleton(name)) {
                continue;
            }
            try {
                beans.getBean(name, LockManager.class).close();
            } catch (RuntimeException e) {
                log.warn("dlock could not close the lock manager '{}' at shutdown", name, e);
            }
        }
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    @Override
    public int getPhase() {
        return PHASE;
    }
}
