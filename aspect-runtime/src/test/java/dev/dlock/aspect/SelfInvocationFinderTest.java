package dev.dlock.aspect;

import dev.dlock.annotation.DistributedLock;
import org.junit.jupiter.api.Test;

import java.lang.reflect.Method;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.assertj.core.api.Assertions.assertThat;

/** Which calls of a class to its own locked methods go through {@code this} (and so pass a Spring proxy by). */
class SelfInvocationFinderTest {

    @SuppressWarnings("unused")
    static class Patterns {
        Patterns self;

        @DistributedLock(key = "#id")
        public void locked(String id) {
        }

        @DistributedLock(key = "#id")
        public long lockedWide(long before, String id, double after) {
            return before;
        }

        @DistributedLock(key = "#id")
        public void onlyThroughOthers(String id) {
        }

        void plain(String id) {
            locked(id);
        }

        void explicitThisWithACallInTheArgument(String id) {
            this.locked(id.trim());
        }

        void throughTheInjectedProxy(String id) {
            self.locked(id);
            self.onlyThroughOthers(id);
        }

        void onAnotherInstance(Patterns other, String id) {
            other.locked(id);
            other.onlyThroughOthers(id);
        }

        long wideArguments(String id) {
            return lockedWide(System.nanoTime(), id + "x", Math.random()) + 1L;
        }

        long wideArgumentsThroughTheProxy(String id) {
            return self.lockedWide(System.nanoTime(), id, 2.0);
        }

        void inALambda(List<String> ids) {
            ids.forEach(id -> locked(id));
        }

        void asAMethodReference(List<String> ids) {
            ids.forEach(this::locked);
        }

        void asAMethodReferenceOnTheProxy(List<String> ids) {
            ids.forEach(self::onlyThroughOthers);
        }

        void inACatchBlock(String id) {
            try {
                locked(id);
            } catch (RuntimeException e) {
                locked(String.valueOf(e.getMessage().length() > 2 ? 1L : 2L));
            }
        }

        static void fromAStaticMethod(Patterns patterns) {
            patterns.onlyThroughOthers("x");
        }
    }

    @Test
    void findsTheCallsThroughThisAndOnlyThose() throws Exception {
        Method locked = Patterns.class.getMethod("locked", String.class);
        Method wide = Patterns.class.getMethod("lockedWide", long.class, String.class, double.class);
        Method others = Patterns.class.getMethod("onlyThroughOthers", String.class);

        Map<Method, Set<String>> found = SelfInvocationFinder.find(Patterns.class, List.of(locked, wide, others));

        assertThat(found).containsOnlyKeys(locked, wide);
        assertThat(found.get(locked)).containsExactlyInAnyOrder(
                "Patterns.plain(String)",
                "Patterns.explicitThisWithACallInTheArgument(String)",
                "Patterns.inALambda (in a lambda)",
                "Patterns.asAMethodReference(List) (as a method reference)",
                "Patterns.inACatchBlock(String)");
        assertThat(found.get(wide)).containsExactly("Patterns.wideArguments(String)");
    }

    /** A subclass's locked method called from code it inherits is a self-invocation too. */
    @Test
    void looksIntoSuperclasses() throws Exception {
        Method locked = Sub.class.getMethod("lockedInSub", String.class);
        assertThat(SelfInvocationFinder.find(Sub.class, List.of(locked)))
                .containsEntry(locked, Set.of("Base.template(String)"));
    }

    /** An override that takes its own lock and delegates to the overridden body: the proxy locks the override's call. */
    @Test
    void anOverrideCallingItsSuperIsNoSelfInvocation() throws Exception {
        Method override = NightlyJob.class.getMethod("run", String.class);
        Method overridden = Job.class.getMethod("run", String.class);
        assertThat(SelfInvocationFinder.find(NightlyJob.class, List.of(override, overridden))).isEmpty();
    }

    static class Job {
        @DistributedLock(key = "#id", name = "job")
        public void run(String id) {
        }
    }

    static class NightlyJob extends Job {
        @Override
        @DistributedLock(key = "#id", name = "nightly-job")
        public void run(String id) {
            super.run(id);
        }
    }

    abstract static class Base {
        void template(String id) {
            lockedInSub(id);
        }

        public abstract void lockedInSub(String id);
    }

    static class Sub extends Base {
        @Override
        @DistributedLock(key = "#id")
        public void lockedInSub(String id) {
        }
    }
}
