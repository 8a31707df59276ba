package dev.dlock.boot.actuate;

import java.util.List;
import java.util.Set;

import org.springframework.boot.actuate.endpoint.EndpointId;
import org.springframework.boot.actuate.endpoint.SecurityContext;
import org.springframework.boot.actuate.endpoint.web.AdditionalPathsMapper;
import org.springframework.boot.actuate.endpoint.web.WebServerNamespace;
import org.springframework.boot.health.actuate.endpoint.AdditionalHealthEndpointPath;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroup;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroups;
import org.springframework.boot.health.actuate.endpoint.HealthEndpointGroupsPostProcessor;
import org.springframework.boot.health.actuate.endpoint.HttpCodeStatusMapper;
import org.springframework.boot.health.actuate.endpoint.StatusAggregator;

/**
 * Adds the {@code dlock} health contributor to the readiness group that Spring Boot creates for its
 * availability probes (Boot 4's health API), so that an instance whose lock store is gone stops
 * receiving traffic; liveness is left alone, as a restart would not bring the store back. A readiness
 * group the application configures itself is left as it is.
 */
public final class LockStoreReadiness implements HealthEndpointGroupsPostProcessor {

    /** The group Spring Boot's availability probes create. */
    public static final String READINESS = "readiness";
    /** The name of dlock's health contributor. */
    public static final String CONTRIBUTOR = "dlock";

    private final boolean configuredByApplication;

    /** Adds dlock to Boot's readiness group unless {@code configuredByApplication} (the application set its members). */
    public LockStoreReadiness(boolean configuredByApplication) {
        this.configuredByApplication = configuredByApplication;
    }

    @Override
    public HealthEndpointGroups postProcessHealthEndpointGroups(HealthEndpointGroups groups) {
        HealthEndpointGroup readiness = groups.get(READINESS);
        if (configuredByApplication || readiness == null || readiness.isMember(CONTRIBUTOR)) {
            return groups;
        }
        return new Groups(groups, new WithLockStore(readiness));
    }

    /** The groups, with readiness replaced; additional paths (/readyz on the main port) still come from Boot's groups. */
    private record Groups(HealthEndpointGroups delegate, HealthEndpointGroup readiness)
            implements HealthEndpointGroups, AdditionalPathsMapper {

        @Override
        public HealthEndpointGroup getPrimary() {
            return delegate.getPrimary();
        }

        @Override
        public Set<String> getNames() {
            return delegate.getNames();
        }

        @Override
        public HealthEndpointGroup get(String name) {
            return READINESS.equals(name) ? readiness : delegate.get(name);
        }

        @Override
        public List<String> getAdditionalPaths(EndpointId endpointId, WebServerNamespace webServerNamespace) {
            return delegate instanceof AdditionalPathsMapper paths ? paths.getAdditionalPaths(endpointId, webServerNamespace) : null;
        }
    }

    /** Boot's readiness group, with dlock as a member too. */
    private record WithLockStore(HealthEndpointGroup delegate) implements HealthEndpointGroup {

        @Override
        public boolean isMember(String name) {
            return CONTRIBUTOR.equals(name) || delegate.isMember(name);
        }

        @Override
        public boolean showComponents(SecurityContext securityContext) {
            return delegate.showComponents(securityContext);
        }

        @Override
        public boolean showDetails(SecurityContext securityContext) {
            return delegate.showDetails(securityContext);
        }

        @Override
        public StatusAggregator getStatusAggregator() {
            return delegate.getStatusAggregator();
        }

        @Override
        public HttpCodeStatusMapper getHttpCodeStatusMapper() {
            return delegate.getHttpCodeStatusMapper();
        }

        @Override
        public AdditionalHealthEndpointPath getAdditionalPath() {
            return delegate.getAdditionalPath();
        }
    }
}
