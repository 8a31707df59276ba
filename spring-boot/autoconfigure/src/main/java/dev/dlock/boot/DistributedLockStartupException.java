package dev.dlock.boot;

/**
 * dlock cannot start as configured: a property value refused, a store module missing, a store that
 * does not answer at startup. It carries what went wrong and what to do, each naming the property or
 * dependency to fix; Spring Boot's failure report shows them as its Description and Action, however
 * deep in the start failure this exception is.
 */
public class DistributedLockStartupException extends IllegalStateException {

    private static final long serialVersionUID = 1L;

    private final String description;
    private final String action;

    /** Creates the exception from what went wrong and what to do about it. */
    public DistributedLockStartupException(String description, String action, Throwable cause) {
        super(description + ". " + action, cause);
        this.description = description;
        this.action = action;
    }

    /** What went wrong, naming the property, dependency or store concerned. */
    public String getDescription() {
        return description;
    }

    /** What to do: the property to change or the dependency to add. */
    public String getAction() {
        return action;
    }

    /** {@code property} holds a value that a rule refuses; {@code reason} says which rule, in the property's terms. */
    static DistributedLockStartupException invalid(String property, String reason, Throwable cause) {
        return new DistributedLockStartupException(property + " is invalid: " + reason,
                "Set " + property + " to a valid value in the application's configuration (application.properties, "
                        + "application.yml or the environment), or remove it to use dlock's default.", cause);
    }
}
