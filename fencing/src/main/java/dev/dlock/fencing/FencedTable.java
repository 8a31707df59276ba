package dev.dlock.fencing;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import dev.dlock.aspect.LockContext;
import dev.dlock.core.StaleFencingTokenException;

import org.springframework.jdbc.core.JdbcOperations;

/**
 * Fenced updates of one table whose rows carry the last fencing token they accepted. Each update is one
 * statement that writes only rows whose token is not above the writer's and sets it to the writer's:
 * <pre>{@code UPDATE account SET balance = ?, fence_token = ? WHERE (id = ?) AND fence_token <= ?}</pre>
 * An equal token is accepted, so one holder can write several times. Made by {@link JdbcFencing#table}.
 */
public final class FencedTable {

    private final JdbcOperations jdbc;
    private final String table;
    private final String tokenColumn;

    FencedTable(JdbcOperations jdbc, String table, String tokenColumn) {
        this.jdbc = jdbc;
        this.table = table;
        this.tokenColumn = tokenColumn;
    }

    /**
     * Runs {@code UPDATE table SET setClause WHERE whereClause} as the holder of {@code fencingToken}; {@code args}
     * bind the set clause's {@code ?} first, then the where clause's.
     *
     * @return the rows written (0 when no row matches)
     * @throws StaleFencingTokenException when rows match but each already accepted a larger token (nothing is written)
     */
    public int update(long fencingToken, String setClause, String whereClause, Object... args) {
        int setParameters = placeholders(setClause);
        if (setParameters > args.length) {
            throw new IllegalArgumentException("Fenced update of " + table + ": the set clause '" + setClause + "' has "
                    + setParameters + " parameters but only " + args.length + " arguments were given");
        }
        List<Object> parameters = new ArrayList<>(args.length + 2);
        parameters.addAll(Arrays.asList(args).subList(0, setParameters));
        parameters.add(fencingToken);
        Object[] whereArgs = Arrays.copyOfRange(args, setParameters, args.length);
        parameters.addAll(Arrays.asList(whereArgs));
        parameters.add(fencingToken);
        int written = jdbc.update("UPDATE " + table + " SET " + setClause + ", " + tokenColumn + " = ? WHERE (" + whereClause
                + ") AND " + tokenColumn + " <= ?", parameters.toArray());
        if (written == 0) {
            // A locking read: under REPEATABLE READ (MySQL's default) a plain one would show the transaction's old snapshot.
            List<Long> accepted = jdbc.queryForList("SELECT " + tokenColumn + " FROM " + table + " WHERE " + whereClause
                    + " FOR UPDATE", Long.class, whereArgs);
            if (!accepted.isEmpty()) {
                throw new StaleFencingTokenException(table + " where " + whereClause + " " + Arrays.toString(whereArgs),
                        fencingToken, JdbcFencing.largerThan(fencingToken, accepted));
            }
        }
        return written;
    }

    /**
     * Runs the update with the token of the {@code @DistributedLock} method running on this thread.
     *
     * @throws IllegalStateException when no locked method runs on this thread
     * @see #update(long, String, String, Object...)
     */
    public int update(String setClause, String whereClause, Object... args) {
        return update(LockContext.current().fencingToken(), setClause, whereClause, args);
    }

    private static int placeholders(String clause) {
        int count = 0;
        boolean quoted = false;
        for (int i = 0; i < clause.length(); i++) {
            char c = clause.charAt(i);
            if (c == '\'') {
                quoted = !quoted;
            } else if (c == '?' && !quoted) {
                count++;
            }
        }
        return count;
    }
}
