package dev.dlock.testkit.faults;

import java.time.Duration;
import java.util.List;

/**
 * A fault the suite injects: it runs for as long as the fault lasts (a restart returns once the store is
 * back, a pause once the process runs again) and says what it did.
 */
public interface Fault {

    /** A short name for the report, such as {@code store-restart}. */
    String name();

    /** Injects the fault and ends it; returns a line for the report. */
    String inject(Workers workers) throws Exception;

    /** The suite's worker JVMs, for faults that hit a lock holder. */
    interface Workers {

        /** A worker index, preferring one that is inside a critical section now (so holding a lock). */
        int pickHolder();

        /** Kills the worker with SIGKILL, at a moment it is inside a critical section, and starts a fresh one in its place. */
        void killAndReplace(int worker) throws Exception;

        /** Stops the worker with SIGSTOP, at a moment it is inside a critical section, for {@code duration}; then SIGCONT. */
        void pause(int worker, Duration duration) throws Exception;

        /** The lock keys most sections contend on, for store faults that aim at them (say, the master of their slot). */
        List<String> hotKeys();
    }

    /** A store fault from a name and an action. */
    static Fault of(String name, FaultAction action) {
        return new Fault() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public String inject(Workers workers) throws Exception {
                return action.run();
            }
        };
    }

    /** The body of a store fault. */
    @FunctionalInterface
    interface FaultAction {
        /** Injects and ends the fault; returns a line for the report. */
        String run() throws Exception;
    }

    /** SIGKILL of a worker JVM that holds a lock; a fresh JVM takes its place. */
    static Fault killHolder() {
        return new Fault() {
            @Override
            public String name() {
                return "kill-holder";
            }

            @Override
            public String inject(Workers workers) throws Exception {
                int worker = workers.pickHolder();
                workers.killAndReplace(worker);
                return "SIGKILL of worker " + worker;
            }
        };
    }

    /** SIGSTOP of a worker JVM that holds a lock, for {@code duration} (past its lease: the GC-pause case), then SIGCONT. */
    static Fault pauseHolder(Duration duration) {
        return new Fault() {
            @Override
            public String name() {
                return "pause-holder";
            }

            @Override
            public String inject(Workers workers) throws Exception {
                int worker = workers.pickHolder();
                workers.pause(worker, duration);
                return "SIGSTOP of worker " + worker + " for " + duration.toMillis() + " ms";
            }
        };
    }
}
