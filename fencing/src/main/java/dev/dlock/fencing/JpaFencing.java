package dev.dlock.fencing;

import java.lang.reflect.Field;
import java.util.List;
import java.util.Objects;

import dev.dlock.aspect.LockContext;
import dev.dlock.core.StaleFencingTokenException;

import jakarta.persistence.EntityManager;
import jakarta.persistence.EntityNotFoundException;
import jakarta.persistence.FlushModeType;
import jakarta.persistence.LockModeType;
import jakarta.persistence.metamodel.EntityType;

/**
 * Fences changes to JPA entities that have a {@link dev.dlock.annotation.FencingToken} field: call {@link #fence} in the transaction that
 * changes the entity, before changing it. One UPDATE advances the row's token only if the row holds no larger one, and
 * the row stays locked until the transaction ends. Why the database must check: a holder paused past its lease still
 * has a stale copy of the token in its persistence context, so a comparison in Java would let its flush overwrite a
 * newer holder's data. On refusal the entity is detached, so none of its changes are flushed.
 * Details and an example: docs/fencing.md#jpa-fencingtoken.
 */
public final class JpaFencing {

    private static final ClassValue<Field> TOKEN_FIELDS = new ClassValue<>() {
        @Override
        protected Field computeValue(Class<?> type) {
            return tokenField(type);
        }
    };

    private final EntityManager entityManager;

    /** Fences entities of {@code entityManager} (Spring's shared, transaction-bound EntityManager works). */
    public JpaFencing(EntityManager entityManager) {
        this.entityManager = Objects.requireNonNull(entityManager, "entityManager");
    }

    /**
     * Advances {@code entity}'s row to {@code fencingToken} unless it accepted a larger one, and sets the entity's
     * {@link dev.dlock.annotation.FencingToken} field to it. Needs an active transaction.
     *
     * @return the entity
     * @throws StaleFencingTokenException when the row accepted a larger token (the entity is detached)
     * @throws EntityNotFoundException when the entity has no row yet (a new entity just sets its field)
     */
    public <T> T fence(T entity, long fencingToken) {
        Objects.requireNonNull(entity, "entity");
        Field field = TOKEN_FIELDS.get(entity.getClass());
        EntityType<?> type = entityType(entity.getClass());
        String idName = type.getId(type.getIdType().getJavaType()).getName();
        Object id = entityManager.getEntityManagerFactory().getPersistenceUnitUtil().getIdentifier(entity);
        if (id == null) {
            throw new IllegalArgumentException("Cannot fence a " + type.getName() + " without an id: set its @FencingToken "
                    + "field directly when it is new");
        }
        String where = " WHERE e." + idName + " = :id";
        int written = entityManager.createQuery("UPDATE " + type.getName() + " e SET e." + field.getName() + " = :token"
                        + where + " AND e." + field.getName() + " <= :token")
                .setParameter("token", fencingToken).setParameter("id", id)
                // No auto-flush first: the entity's pending changes must not reach the database before the check.
                .setFlushMode(FlushModeType.COMMIT)
                .executeUpdate();
        if (written == 0) {
            // A locking read: under REPEATABLE READ (MySQL's default) a plain one would show the transaction's old snapshot.
            List<?> accepted = entityManager.createQuery("SELECT e." + field.getName() + " FROM " + type.getName() + " e" + where)
                    .setParameter("id", id).setFlushMode(FlushModeType.COMMIT).setLockMode(LockModeType.PESSIMISTIC_READ)
                    .getResultList();
            if (accepted.isEmpty()) {
                throw new EntityNotFoundException("No row of " + type.getName() + " with id " + id + " to fence");
            }
            entityManager.detach(entity);
            @SuppressWarnings("unchecked")
            List<? extends Number> tokens = (List<? extends Number>) accepted;
            throw new StaleFencingTokenException(type.getName() + " " + id, fencingToken, JdbcFencing.largerThan(fencingToken, tokens));
        }
        try {
            field.setLong(entity, fencingToken);
        } catch (IllegalAccessException e) {
            throw new IllegalStateException("Cannot set @FencingToken field " + field, e);
        }
        return entity;
    }

    /**
     * Fences {@code entity} with the token of the {@code @DistributedLock} method running on this thread.
     *
     * @throws IllegalStateException when no locked method runs on this thread
     * @see #fence(Object, long)
     */
    public <T> T fence(T entity) {
        return fence(entity, LockContext.current().fencingToken());
    }

    /**
     * The entity type of {@code type}. A lazy proxy (a subclass the provider generated) is refused: the token
     * set on it would not reach the entity behind it, whose stale token a full-row UPDATE would write back.
     */
    private EntityType<?> entityType(Class<?> type) {
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            EntityType<?> entityType = entityTypeOrNull(c);
            if (entityType != null && c != type) {
                throw new IllegalArgumentException("Cannot fence a lazy proxy of " + entityType.getName() + " ("
                        + type.getName() + "): load the entity itself (find, or a query), not a reference");
            }
            if (entityType != null) {
                return entityType;
            }
        }
        throw new IllegalArgumentException(type.getName() + " is not an entity of this EntityManager");
    }

    private EntityType<?> entityTypeOrNull(Class<?> type) {
        try {
            return entityManager.getMetamodel().entity(type);
        } catch (IllegalArgumentException notAnEntity) {
            return null;
        }
    }

    /** The entity's field marked {@code @FencingToken} (this package's deprecated one too), made accessible. */
    @SuppressWarnings("deprecation")
    static Field tokenField(Class<?> type) {
        for (Class<?> c = type; c != null && c != Object.class; c = c.getSuperclass()) {
            for (Field field : c.getDeclaredFields()) {
                if (field.isAnnotationPresent(dev.dlock.annotation.FencingToken.class) || field.isAnnotationPresent(FencingToken.class)) {
                    if (field.getType() != long.class) {
                        throw new IllegalArgumentException("@FencingToken field " + c.getName() + "." + field.getName()
                                + " must be a long, is " + field.getType().getName());
                    }
                    field.setAccessible(true);
                    return field;
                }
            }
        }
        throw new IllegalArgumentException(type.getName() + " has no @FencingToken long field; mark the column "
                + "holding the last accepted fencing token");
    }
}
