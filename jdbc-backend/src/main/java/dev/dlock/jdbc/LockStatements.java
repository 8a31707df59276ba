package dev.dlock.jdbc;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.StringJoiner;

/**
 * The SQL of one dialect for one lock table. Every time in it is the database's own ({@code ?} lease
 * parameters are durations in milliseconds, never instants), so the JVMs' clocks never matter.
 *
 * <p>Columns: {@code lock_key} (primary key), {@code owner} (null when free), {@code token} (the last
 * fencing token: from the table's sequence, or on MySQL the row's own count), {@code expires_at} (the end
 * of the lease, or the release time once released). A key is held while its owner is set and
 * {@code expires_at} is ahead.
 */
final class LockStatements {

    /** The table's sequence is its name plus this. */
    static final String SEQUENCE_SUFFIX = "_token_seq";
    /** On MySQL, the one-row table holding the token floor is the lock table's name plus this. */
    static final String FLOOR_SUFFIX = "_token_floor";
    /**
     * H2: the key of the free row whose lock backends raising the token floor take turns on (PostgreSQL: part of the
     * advisory lock's name). A store key may be the same string: a holder of it only waits the few ms of a raise.
     */
    static final String TOKEN_FLOOR_TURN_KEY = "dlock-internal:token-floor-turn";

    /**
     * Takes the key when its row exists and is free, run out or already the owner's (see {@link #bindAcquire});
     * creates the row, free, when the key has none. Answers one row (owner, token, remaining ms) — the owner
     * now holding the key; a null owner with a token when the row was just created — or, on H2, (owner, token)
     * when the row changed and no row when someone else holds the key. On MySQL an UPDATE of an existing row
     * only, answering its update count: the statements of {@link #counting} read the answer back and create rows.
     *
     * <p>The token is drawn only in the update of an existing row, which the statement holds locked by then:
     * an insert draws its values before the conflict check, and a statement stalled in that check could
     * otherwise write a token lower than one a later holder already used (after cleanup deleted that
     * holder's row). A key without a row therefore costs a second run of this statement.
     */
    final String acquire;
    /** For H2 only: the remaining lease of the key's holder, in ms. Parameter: key. Null otherwise. */
    final String remaining;
    /** Frees the key when the owner holds it; one row or update count 1 when released. Parameters: key, owner (and the notice channel on PostgreSQL). */
    final String release;
    /** Whether {@link #release} returns rows ({@code RETURNING}) rather than an update count. */
    final boolean releaseReturnsRows;
    /** The key's token and whether it is free. Parameter: key. */
    final String state;
    /**
     * Deletes up to a batch of rows free for longer than the retention. Parameters: retention ms, limit (PostgreSQL:
     * retention ms again; MySQL: retention ms, the largest token it may delete, limit).
     */
    final String sweep;
    /** The cheapest round trip that still needs the lock table: no row is read, but a missing table fails it. */
    final String ping;
    /** The statements of the token path without a sequence, on MySQL; null for the other dialects. */
    final RowCounting counting;
    /**
     * Reads the token sequence's next value (PostgreSQL: its last value) and the database's clock in microseconds, the
     * floor Redis's tokens have; {@link #moveSequence} then moves the sequence when it is below. On MySQL it reads the
     * clock only, which the backend binds into every take ({@code GREATEST(token + 1, clock)}) and every new row's
     * token: writing the floor row would wait for acquisitions that share-lock it.
     */
    final String raiseFloor;
    /**
     * PostgreSQL: takes the advisory lock, held until the transaction ends, that backends raising this table's token
     * floor take turns on; null elsewhere. Its number is a hash of the sequence's name: an application's advisory lock
     * of the same number only delays a raise, within the query timeout.
     */
    final String takeRaiseTurn;
    /** H2: creates the free row whose lock the raisers take turns on when it is missing; parameters: key, key. */
    final String createTurnRow;
    /** H2: locks the turn row until the raise commits; parameter: key. */
    final String takeTurnRow;
    private final JdbcDialect dialect;
    private final String table;

    private LockStatements(JdbcDialect dialect, String table, String acquire, String remaining,
                           String release, boolean releaseReturnsRows, String sweep, RowCounting counting) {
        this.dialect = dialect;
        this.table = table;
        this.acquire = acquire;
        this.remaining = remaining;
        this.release = release;
        this.releaseReturnsRows = releaseReturnsRows;
        this.state = "SELECT token, owner IS NULL OR expires_at <= " + now(dialect) + " FROM " + table + " WHERE lock_key = ?";
        this.sweep = sweep;
        this.ping = "SELECT 1 FROM " + table + " WHERE 1 = 0";
        this.counting = counting;
        String sequence = table + SEQUENCE_SUFFIX;
        String clock = clockMicros(dialect);
        this.raiseFloor = switch (dialect) {
            case POSTGRESQL -> "SELECT last_value, " + clock + " FROM " + sequence;
            case MARIADB -> "SELECT NEXTVAL(" + sequence + "), " + clock;
            case H2 -> "SELECT NEXT VALUE FOR " + sequence + ", " + clock;
            case MYSQL -> "SELECT " + clock;
        };
        this.takeRaiseTurn = dialect != JdbcDialect.POSTGRESQL ? null
                : "SELECT pg_advisory_xact_lock(hashtext('" + TOKEN_FLOOR_TURN_KEY + ":" + sequence + "'))";
        this.createTurnRow = dialect != JdbcDialect.H2 ? null : "INSERT INTO " + table + " (lock_key, owner, token, expires_at)"
                + " SELECT CAST(? AS VARCHAR(1024)), NULL, 0, " + now(dialect)
                + " WHERE NOT EXISTS (SELECT 1 FROM " + table + " WHERE lock_key = ?)";
        this.takeTurnRow = dialect != JdbcDialect.H2 ? null : "SELECT lock_key FROM " + table + " WHERE lock_key = ? FOR UPDATE";
    }

    /**
     * Moves the sequence to {@code micros}, read above its next value by {@link #raiseFloor}: MariaDB's SETVAL never
     * lowers a sequence; PostgreSQL's setval and H2's RESTART can, so their callers hold off other raisers.
     */
    String moveSequence(long micros) {
        String sequence = table + SEQUENCE_SUFFIX;
        return switch (dialect) {
            case MARIADB -> "SELECT SETVAL(" + sequence + ", " + micros + ")";
            case POSTGRESQL -> "SELECT setval('" + sequence + "', " + micros + ")";
            case H2 -> "ALTER SEQUENCE " + sequence + " RESTART WITH " + micros;
            case MYSQL -> throw new IllegalStateException("MySQL has no token sequence");
        };
    }

    /**
     * The MySQL token path, for a database without sequences: each row counts its own tokens, {@code token + 1}
     * under the row's lock, and a row that cleanup deleted comes back above the one-row floor table, which the
     * cleanup transaction raised to every token it deleted. A new row reads the floor under a shared lock held
     * until the row is committed, so no cleanup can delete a row of the key between that read and the insert,
     * however long the insert stalls.
     *
     * @param readBack       the key's owner, token and remaining lease in ms (MySQL has no {@code RETURNING}). Parameter: key.
     * @param lockedReadBack {@code readBack} as a locking read, for inside a transaction: it sees the latest row, never
     *                       a snapshot older than the transaction's own upsert (the row is locked by then anyway).
     * @param floor          the floor, share-locked until commit. No parameter.
     * @param create         inserts the key's row taken, at the token given, or takes the existing row as {@link #acquire}
     *                       does. Parameters: key, owner, token, lease ms, then four owners and the lease ms again.
     * @param idleMaxToken   the largest token among up to a batch of rows cleanup may delete, or null when there is none.
     *                       Parameters: retention ms, limit.
     * @param raiseFloor     raises the floor to a token. Parameter: token.
     */
    record RowCounting(String readBack, String lockedReadBack, String floor, String create, String idleMaxToken,
                       String raiseFloor) {
    }

    /** The statements of {@code dialect} over {@code table} and its sequence or floor table. */
    static LockStatements of(JdbcDialect dialect, String table) {
        String sequence = table + SEQUENCE_SUFFIX;
        String now = now(dialect);
        String remaining = remainingMillis(dialect);
        return switch (dialect) {
            case POSTGRESQL -> new LockStatements(dialect, table,
                    "WITH taken AS (INSERT INTO " + table + " AS l (lock_key, owner, token, expires_at)"
                            + " VALUES (?, NULL, 0, " + now + ")"
                            + " ON CONFLICT (lock_key) DO UPDATE SET owner = ?,"
                            + " token = nextval('" + sequence + "'), expires_at = " + plusMillis(dialect, "?")
                            + " WHERE l.owner IS NULL OR l.expires_at <= " + now + " OR l.owner = ?"
                            + " RETURNING l.owner, l.token)"
                            + " SELECT (SELECT owner FROM taken), (SELECT token FROM taken), (SELECT " + remaining
                            + " FROM " + table + " WHERE lock_key = ?)",
                    null,
                    "UPDATE " + table + " SET owner = NULL, expires_at = " + now
                            + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now + " RETURNING pg_notify(?, '')",
                    true,
                    "DELETE FROM " + table + " WHERE lock_key IN (SELECT lock_key FROM " + table
                            + " WHERE expires_at < " + minusMillis(dialect, "?") + " LIMIT ?)"
                            + " AND expires_at < " + minusMillis(dialect, "?"),
                    null);
            // ON DUPLICATE KEY UPDATE assigns left to right and later terms see earlier results: the token and
            // owner are decided on the old owner, then the lease follows whoever owns the row now.
            case MARIADB -> new LockStatements(dialect, table,
                    "INSERT INTO " + table + " (lock_key, owner, token, expires_at) VALUES (?, NULL, 0, " + now + ")"
                            + " ON DUPLICATE KEY UPDATE"
                            + " token = IF(owner IS NULL OR expires_at <= " + now + " OR owner = ?,"
                            + " NEXTVAL(" + sequence + "), token),"
                            + " owner = IF(owner IS NULL OR expires_at <= " + now + " OR owner = ?, ?, owner),"
                            + " expires_at = IF(owner = ?, " + plusMillis(dialect, "?") + ", expires_at)"
                            + " RETURNING owner, token, " + remaining,
                    null,
                    "UPDATE " + table + " SET owner = NULL, expires_at = " + now
                            + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now,
                    false,
                    "DELETE FROM " + table + " WHERE expires_at < " + minusMillis(dialect, "?") + " LIMIT ?",
                    null);
            // No sequence and no RETURNING: every assignment tests the same condition, which stays true once
            // the owner is set, so the row ends the same whether MySQL assigns left to right or all at once.
            case MYSQL -> {
                String floorTable = table + FLOOR_SUFFIX;
                String readBack = "SELECT owner, token, " + remaining + " FROM " + table + " WHERE lock_key = ?";
                String free = "(owner IS NULL OR expires_at <= " + now + " OR owner = ?)";
                // A row written before the floor was raised (an earlier version, another store's era) takes the floor.
                String take = " token = IF(" + free + ", GREATEST(token + 1, ?), token),"
                        + " owner = IF(" + free + ", ?, owner),"
                        + " expires_at = IF(" + free + ", " + plusMillis(dialect, "?") + ", expires_at)";
                yield new LockStatements(dialect, table,
                        "UPDATE " + table + " SET" + take + " WHERE lock_key = ?",
                        null,
                        "UPDATE " + table + " SET owner = NULL, expires_at = " + now
                                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now,
                        false,
                        "DELETE FROM " + table + " WHERE expires_at < " + minusMillis(dialect, "?") + " AND token <= ? LIMIT ?",
                        new RowCounting(readBack, readBack + " LOCK IN SHARE MODE",
                                "SELECT token FROM " + floorTable + " WHERE id = 1 LOCK IN SHARE MODE",
                                "INSERT INTO " + table + " (lock_key, owner, token, expires_at) VALUES (?, ?, ?, "
                                        + plusMillis(dialect, "?") + ") ON DUPLICATE KEY UPDATE" + take,
                                "SELECT MAX(token) FROM (SELECT token FROM " + table + " WHERE expires_at < "
                                        + minusMillis(dialect, "?") + " LIMIT ?) idle",
                                "UPDATE " + floorTable + " SET token = GREATEST(token, ?) WHERE id = 1"));
            }
            case H2 -> new LockStatements(dialect, table,
                    "SELECT owner, token FROM FINAL TABLE (MERGE INTO " + table + " l USING (VALUES (CAST(? AS VARCHAR(1024)),"
                            + " CAST(? AS VARCHAR(255)), CAST(? AS BIGINT))) v(k, o, lease) ON l.lock_key = v.k"
                            + " WHEN MATCHED AND (l.owner IS NULL OR l.expires_at <= " + now + " OR l.owner = v.o)"
                            + " THEN UPDATE SET owner = v.o, token = NEXT VALUE FOR " + sequence + ","
                            + " expires_at = " + plusMillis(dialect, "v.lease")
                            + " WHEN NOT MATCHED THEN INSERT (lock_key, owner, token, expires_at)"
                            + " VALUES (v.k, NULL, 0, " + now + "))",
                    "SELECT " + remaining + " FROM " + table + " WHERE lock_key = ?",
                    "UPDATE " + table + " SET owner = NULL, expires_at = " + now
                            + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now,
                    false,
                    "DELETE FROM " + table + " WHERE expires_at < " + minusMillis(dialect, "?") + " FETCH FIRST ? ROWS ONLY",
                    null);
        };
    }

    /**
     * Binds key, owner and lease ms to {@link #acquire}, each where this dialect's statement needs it; on MySQL also the
     * token floor this backend raised (the least token a row it takes gets).
     */
    void bindAcquire(PreparedStatement statement, String key, String owner, long leaseMillis, long floor) throws SQLException {
        switch (dialect) {
            case POSTGRESQL -> {
                statement.setString(1, key);
                statement.setString(2, owner);
                statement.setLong(3, leaseMillis);
                statement.setString(4, owner);
                statement.setString(5, key);
            }
            case MARIADB -> {
                statement.setString(1, key);
                for (int parameter = 2; parameter <= 5; parameter++) {
                    statement.setString(parameter, owner);
                }
                statement.setLong(6, leaseMillis);
            }
            case MYSQL -> {
                bindTake(statement, 1, owner, leaseMillis, floor);
                statement.setString(7, key);
            }
            case H2 -> {
                statement.setString(1, key);
                statement.setString(2, owner);
                statement.setLong(3, leaseMillis);
            }
        }
    }

    /** Binds key, owner, the new row's token and lease ms to {@link RowCounting#create}, and the take's as {@link #bindAcquire}. */
    void bindCreate(PreparedStatement statement, String key, String owner, long token, long leaseMillis, long floor)
            throws SQLException {
        statement.setString(1, key);
        statement.setString(2, owner);
        statement.setLong(3, token);
        statement.setLong(4, leaseMillis);
        bindTake(statement, 5, owner, leaseMillis, floor);
    }

    /**
     * The MySQL take's parameters from {@code first} on: the owner in the token's condition, the floor, the owner in
     * the other two conditions and as the value, then the lease.
     */
    private static void bindTake(PreparedStatement statement, int first, String owner, long leaseMillis, long floor)
            throws SQLException {
        statement.setString(first, owner);
        statement.setLong(first + 1, floor);
        for (int parameter = first + 2; parameter < first + 5; parameter++) {
            statement.setString(parameter, owner);
        }
        statement.setLong(first + 5, leaseMillis);
    }

    /** Extends {@code size} leases of {@code leaseMillis} in one statement. Parameters: lease ms, then key and owner per lease. */
    String renew(int size) {
        StringJoiner pairs = new StringJoiner(", ", "(", ")");
        for (int i = 0; i < size; i++) {
            pairs.add("(?, ?)");
        }
        return "UPDATE " + table + " SET expires_at = " + plusMillis(dialect, "?") + " WHERE (lock_key, owner) IN " + pairs
                + " AND expires_at > " + now(dialect);
    }

    /**
     * Gives a live lease a new term under a new owner: a retired owner with what is left of {@code lockAtLeastFor}, or
     * an extension's owner with its lease; update count 1 when done. Parameters: new owner, ms, key, owner.
     */
    String shorten() {
        return "UPDATE " + table + " SET owner = ?, expires_at = " + plusMillis(dialect, "?")
                + " WHERE lock_key = ? AND owner = ? AND expires_at > " + now(dialect);
    }

    /** Each key's owner and whether its lease still runs, for the keys of a renew batch that were not renewed. Parameters: the keys. */
    String holders(int size) {
        StringJoiner keys = new StringJoiner(", ", "(", ")");
        for (int i = 0; i < size; i++) {
            keys.add("?");
        }
        return "SELECT lock_key, owner, expires_at > " + now(dialect) + " FROM " + table + " WHERE lock_key IN " + keys;
    }

    /** The database's clock in microseconds since the epoch (UTC), the scale of Redis's tokens. */
    static String clockMicros(JdbcDialect dialect) {
        return switch (dialect) {
            case POSTGRESQL -> "CAST(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000 AS BIGINT)";
            case MARIADB, MYSQL -> "TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', UTC_TIMESTAMP(6))";
            case H2 -> "DATEDIFF(MICROSECOND, TIMESTAMP WITH TIME ZONE '1970-01-01 00:00:00+00', CURRENT_TIMESTAMP)";
        };
    }

    /** The database's current time: the real time at the statement, never the JVM's. */
    static String now(JdbcDialect dialect) {
        return switch (dialect) {
            case POSTGRESQL -> "clock_timestamp()";
            case MARIADB, MYSQL -> "UTC_TIMESTAMP(6)";
            case H2 -> "CURRENT_TIMESTAMP";
        };
    }

    private static String plusMillis(JdbcDialect dialect, String millis) {
        return switch (dialect) {
            case POSTGRESQL -> "clock_timestamp() + " + millis + " * INTERVAL '1 millisecond'";
            case MARIADB, MYSQL -> "UTC_TIMESTAMP(6) + INTERVAL " + millis + " * 1000 MICROSECOND";
            case H2 -> "DATEADD(MILLISECOND, " + millis + ", CURRENT_TIMESTAMP)";
        };
    }

    private static String minusMillis(JdbcDialect dialect, String millis) {
        return switch (dialect) {
            case POSTGRESQL -> "clock_timestamp() - " + millis + " * INTERVAL '1 millisecond'";
            case MARIADB, MYSQL -> "UTC_TIMESTAMP(6) - INTERVAL " + millis + " * 1000 MICROSECOND";
            case H2 -> "DATEADD(MILLISECOND, -" + millis + ", CURRENT_TIMESTAMP)";
        };
    }

    static String remainingMillis(JdbcDialect dialect) {
        return switch (dialect) {
            case POSTGRESQL -> "CAST(CEIL(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000) AS BIGINT)";
            case MARIADB, MYSQL -> "CEIL(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) / 1000)";
            case H2 -> "DATEDIFF(MILLISECOND, CURRENT_TIMESTAMP, expires_at) + 1";
        };
    }
}
