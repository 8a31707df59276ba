package dev.dlock.weaving;

import dev.dlock.annotation.DistributedLock;
import dev.dlock.annotation.FencingToken;
import dev.dlock.aspect.LockContext;

/**
 * A plain class, no Spring: its public methods call their own {@code @DistributedLock} methods
 * through {@code this}, which a Spring AOP proxy would not intercept. Woven by ajc, they are locked.
 */
public class SelfInvokingWorker {

    /** Runs {@code section} under the lock on {@code id}, reached by self-invocation. */
    public void work(String id, Runnable section) {
        this.locked(id, section);
    }

    /** Returns the fencing token seen inside a private locked method, reached by self-invocation. */
    public long tokenViaPrivateMethod(String id) {
        return privateLocked(id);
    }

    @DistributedLock(key = "#id", waitTime = "10s")
    public void locked(String id, Runnable section) {
        section.run();
    }

    @DistributedLock(key = "#id", name = "worker.private", waitTime = "200ms")
    private long privateLocked(String id) {
        return LockContext.current().fencingToken();
    }

    /** Returns the fencing token a private locked method got as its {@code @FencingToken} parameter, reached by self-invocation. */
    public long tokenViaParameter(String id) {
        return privateTokenParameter(id, 0);
    }

    @DistributedLock(key = "#id", name = "worker.token-parameter", waitTime = "200ms")
    private long privateTokenParameter(String id, @FencingToken long token) {
        return token == LockContext.current().fencingToken() ? token : -token;
    }

    /** A static locked method given its token as a parameter: woven code proceeds with the token in the caller's place. */
    @DistributedLock(key = "#id", name = "worker.static-token", waitTime = "200ms")
    public static long staticTokenParameter(@FencingToken long token, String id) {
        return token == LockContext.current().fencingToken() ? token : -token;
    }

    /** A static locked method: a Spring proxy could never intercept it; woven, it is locked. */
    @DistributedLock(key = "#id", name = "worker.static", waitTime = "200ms")
    public static long staticLocked(String id) {
        return LockContext.current().fencingToken();
    }

    /** A final locked method: a CGLIB proxy cannot override it; woven, it is locked. */
    @DistributedLock(key = "#id", name = "worker.final", waitTime = "200ms")
    public final long finalLocked(String id) {
        return LockContext.current().fencingToken();
    }
}
