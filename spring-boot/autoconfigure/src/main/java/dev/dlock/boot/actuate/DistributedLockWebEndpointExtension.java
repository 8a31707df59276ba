package dev.dlock.boot.actuate;

import dev.dlock.boot.actuate.DistributedLockEndpoint.LockHoldersDescriptor;
import dev.dlock.core.LockHolder;
import dev.dlock.core.LockKeyException;
import org.springframework.boot.actuate.endpoint.annotation.DeleteOperation;
import org.springframework.boot.actuate.endpoint.annotation.ReadOperation;
import org.springframework.boot.actuate.endpoint.annotation.Selector;
import org.springframework.boot.actuate.endpoint.web.WebEndpointResponse;
import org.springframework.boot.actuate.endpoint.web.annotation.EndpointWebExtension;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The web's answers of the {@code dlock} endpoint: {@code 404} with a body saying why when the name and key match no
 * lock (or, for {@code DELETE}, nobody holds the key: nothing is released, counted or logged), {@code 400} for a
 * key no store takes, {@code 501} when the store cannot force a release. The list of held locks is the endpoint's own.
 */
@EndpointWebExtension(endpoint = DistributedLockEndpoint.class)
public class DistributedLockWebEndpointExtension {

    private static final int STATUS_NOT_IMPLEMENTED = 501;

    private final DistributedLockEndpoint endpoint;

    /** Creates the web extension of {@code endpoint}. */
    public DistributedLockWebEndpointExtension(DistributedLockEndpoint endpoint) {
        this.endpoint = Objects.requireNonNull(endpoint, "endpoint");
    }

    /** {@code GET /actuator/dlock/{name}?key=}: who holds the key ({@code 404} when it is not one of lock {@code name}'s keys). */
    @ReadOperation
    public WebEndpointResponse<Object> holders(@Selector String name, String key) {
        WebEndpointResponse<Object> refused = refusal(name, key);
        return refused != null ? refused : new WebEndpointResponse<>(endpoint.holders(name, key));
    }

    /**
     * {@code DELETE /actuator/dlock/{name}?key=}: frees the key whoever holds it ({@code 404} when it is not one of lock
     * {@code name}'s keys or nobody holds it; {@code 501} when the store cannot). Spring Boot refuses the operation
     * itself unless {@code management.endpoint.dlock.access=unrestricted}.
     */
    @DeleteOperation
    public WebEndpointResponse<Object> forceRelease(@Selector String name, String key) {
        WebEndpointResponse<Object> refused = refusal(name, key);
        if (refused != null) {
            return refused;
        }
        if (!endpoint.storeCanForceRelease()) {
            return error(STATUS_NOT_IMPLEMENTED, "the lock store " + endpoint.storeName() + " cannot force a release", name, key);
        }
        List<LockHolder> removed = endpoint.forceReleaseIfHeld(name, key);
        if (removed.isEmpty()) {
            return error(WebEndpointResponse.STATUS_NOT_FOUND, "nobody holds key '" + key + "' of lock '" + name
                    + "': nothing was released", name, key);
        }
        return new WebEndpointResponse<>(new LockHoldersDescriptor(name, key, true, removed));
    }

    /** The answer when {@code key} is not one of lock {@code name}'s keys (or no key at all); null when it is. */
    private WebEndpointResponse<Object> refusal(String name, String key) {
        try {
            String problem = endpoint.notAKeyOf(name, key);
            return problem == null ? null : error(WebEndpointResponse.STATUS_NOT_FOUND, problem, name, key);
        } catch (LockKeyException e) {
            return error(WebEndpointResponse.STATUS_BAD_REQUEST, e.getMessage(), name, key);
        }
    }

    private static WebEndpointResponse<Object> error(int status, String message, String name, String key) {
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("error", message);
        body.put("name", name);
        body.put("key", key);
        return new WebEndpointResponse<>(body, status);
    }
}
