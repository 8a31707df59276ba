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
 * One ShedLock lock held through a dlock handle. ShedLock's {@link AbstractSimpleLock} keeps its rules (a second unlock
 * throws {@link IllegalStateException}); the unlock reports a lost lease or a store it could not reach as a WARN and
 * never throws it: ShedLock unlocks in a {@code finally}, where an exception would replace the task's own result or
 * error, and the task's work is done either way (the lease was already lost, or frees itself within
 * {@code lockAtMostFor}). The manager's listeners hear of a loss from the engine as for any lock.
 */
final class DlockSimpleLock extends AbstractSimpleLock {

    private static final Logger log = LoggerFactory.getLogger(DlockLockProvider.class);

    private final LockHandle handle;
    private final ShedLockContext context;

    DlockSimpleLock(LockConfiguration configuration, LockHandle handle, ShedLockContext context) {
        super(configuration);
        this.handle = handle;
        this.context = context;
    }

    @Override
    protected void doUnlock() {
        context.end();
        try {
            handle.close();
        } catch (LockLostException e) {
            log.warn("ShedLock lock '{}' was lost before its unlock, so another instance may have run the task at the same "
                    + "time (give lockAtMostFor {} room for the longest run): {}", lockConfiguration.getName(),
                    lockConfiguration.getLockAtMostFor(), e.getMessage());
        } catch (LockBackendException e) {
            log.warn("ShedLock lock '{}' could not be released in the store; it frees itself within lockAtMostFor {}",
                    lockConfiguration.getName(), lockConfiguration.getLockAtMostFor(), e);
        }
    }

    /** Not supported: dlock extends no fixed lease yet (ShedLock's {@link SimpleLock#extend} contract allows this). */
    @Override
    protected Optional<SimpleLock> doExtend(LockConfiguration newConfiguration) {
        throw new UnsupportedOperationException("dlock's ShedLock provider does not extend locks: give lockAtMostFor room "
                + "for the longest run, or use @DistributedLock, whose watchdog keeps the lease alive while the job runs");
    }

    @Override
    public String toString() {
        return "DlockSimpleLock[" + lockConfiguration.getName() + ", " + handle + "]";
    }
}
