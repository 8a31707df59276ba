package dev.dlock.core;

/** What releasing a lock whose lease was lost does. Either way the loss is reported to listeners and the handle. */
public enum LeaseLostPolicy {
    /** The release throws {@link LockLostException}. */
    THROW,
    /** The release logs a warning and returns normally. */
    LOG
}
