package dev.dlock.shedlock;

import dev.dlock.core.LockBackendException;
import dev.dlock.core.LockHandle;
import dev.dlock.core.LockLostException;
import net.javacrumbs.shedlock.core.AbstractSimpleLock;
import net.javacrumbs.shedlock.core.LockConfiguration;
import net.javacrumbs.shedlock.core.SimpleLock;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.Optional;

/**
 * One ShedLock lock held through a dlock handle. ShedLock's {@link AbstractSimpleLock} keeps its rules (a second unlock,
 * or any call after an extension, throws {@link IllegalStateException}); an extension answers a new lock over the same
 * handle, whose lease now has a new term. The unlock reports a lost lease or a store it could not reach as a WARN and
 * never throws it: ShedLock unlocks in a {@code finally}, where an exception would replace the task's own result or
 * error, and the task's work is done either way (the lease was already lost, or frees itself within
 * {@code lockAtMostFor}). The manager's listeners hear of a loss from the engine as for any lock.
 */
final class DlockSimpleLock extends AbstractSimpleLock {

    private static final Logger log = LoggerFactory.getLogger(DlockLockProvider.class);

    private final DlockLockProvider provider;
    private final LockHandle handle;
    private final ShedLockContext context;

    DlockSimpleLock(DlockLockProvider provider, LockConfiguration configuration, LockHandle handle, ShedLockContext context) {
        super(configuration);
        this.provider = provider;
        this.handle = handle;
        this.context = context;
    }

    @Override
    protected void doUnlock() {
        release(lockConfiguration);
    }

    private void release(LockConfiguration configuration) {
        context.end();
        try {
            handle.close();
        } catch (LockLostException e) {
            log.warn("ShedLock lock '{}' was lost before its unlock, so another instance may have run the task at the same "
                    + "time (give lockAtMostFor {} room for the longest run): {}", configuration.getName(),
                    configuration.getLockAtMostFor(), e.getMessage());
        } catch (LockBackendException e) {
            log.warn("ShedLock lock '{}' could not be released in the store; it frees itself within lockAtMostFor {}",
                    configuration.getName(), configuration.getLockAtMostFor(), e);
        }
    }

    /**
     * Extends the lease to the new {@code lockAtMostFor} from now, with the new {@code lockAtLeastFor} counted from now,
     * and answers the new lock (ShedLock then holds this one invalid). Empty when the lease was lost or had run out:
     * the lock is released here (nothing else will unlock it), the loss logged as at an unlock.
     *
     * @throws LockBackendException when the store could not be told: this lock stays valid (ShedLock's rule for a
     *         failed extension), and its unlock frees the key whether or not the extension landed
     */
    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration newConfiguration) {
        try {
            handle.extend(provider.lease(newConfiguration), DlockLockProvider.lockAtLeastFor(newConfiguration));
        } catch (LockLostException e) {
            release(lockConfiguration);
            return Optional.empty();
        }
        return Optional.of(new DlockSimpleLock(provider, newConfiguration, handle, context));
    }

    @Override
    public String toString() {
        return "DlockSimpleLock[" + lockConfiguration.getName() + ", " + handle + "]";
    }
}
