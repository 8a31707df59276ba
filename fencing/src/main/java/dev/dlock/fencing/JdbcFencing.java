package dev.dlock.fencing;

import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

import dev.dlock.aspect.LockContext;
import dev.dlock.core.StaleFencingTokenException;

import org.springframework.jdbc.core.ConnectionCallback;
import org.springframework.jdbc.core.JdbcOperations;
import org.springframework.transaction.support.TransactionSynchronizationManager;

/**
 * Fenced SQL writes through a {@code JdbcTemplate}, on the current Spring transaction's connection: a write carrying
 * a fencing token lower than one the resource already accepted is refused by the database in the write itself (a
 * check read first would let a paused holder write over a newer one), as a {@link StaleFencingTokenException}. The
 * accepted token lives in a column of the rows ({@link #table(String, String)}), or in a fence row per resource
 * ({@link #claim(String, long)}, table {@value #DEFAULT_FENCE_TABLE}, inside a transaction only).
 * Details and an example: docs/fencing.md#jdbc-a-token-column-in-the-row.
 */
public final class JdbcFencing {

    /** The fence table {@link #claim} uses unless told otherwise. */
    public static final String DEFAULT_FENCE_TABLE = "dlock_fence";
    /** The longest resource name a fence row holds. */
    public static final int MAX_RESOURCE_LENGTH = 255;

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]*(\\.[A-Za-z_][A-Za-z0-9_]*)?");

    private final JdbcOperations jdbc;
    private final String fenceTable;
    private volatile FenceDialect dialect;

    /** Fences writes made through {@code jdbc}, with fence rows in {@value #DEFAULT_FENCE_TABLE} and the dialect detected. */
    public JdbcFencing(JdbcOperations jdbc) {
        this(jdbc, DEFAULT_FENCE_TABLE, null);
    }

    /** Fences writes made through {@code jdbc}, with fence rows in {@code fenceTable}; a null dialect is detected on first use. */
    public JdbcFencing(JdbcOperations jdbc, String fenceTable, FenceDialect dialect) {
        this.jdbc = Objects.requireNonNull(jdbc, "jdbc");
        this.fenceTable = identifier(fenceTable, "fenceTable");
        this.dialect = dialect;
    }

    /** The guard of {@code table}'s rows, whose column {@code tokenColumn} (a BIGINT) holds the last token each accepted. */
    public FencedTable table(String table, String tokenColumn) {
        return new FencedTable(jdbc, identifier(table, "table"), identifier(tokenColumn, "tokenColumn"));
    }

    /**
     * Claims {@code resource}'s fence row for {@code fencingToken} in the current transaction; the writes after it in
     * that transaction are fenced.
     *
     * @throws StaleFencingTokenException when the resource already accepted a larger token
     * @throws IllegalStateException when no transaction is active
     */
    public void claim(String resource, long fencingToken) {
        Objects.requireNonNull(resource, "resource");
        if (resource.isEmpty() || resource.length() > MAX_RESOURCE_LENGTH) {
            throw new IllegalArgumentException("Fenced resource name must be 1 to " + MAX_RESOURCE_LENGTH
                    + " characters, got " + resource.length() + ": '" + resource + "'");
        }
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("JdbcFencing.claim('" + resource + "') needs a transaction (@Transactional or "
                    + "a TransactionTemplate): the fence row stays locked until commit, which is what fences the writes after it");
        }
        if (dialect().claim(jdbc, fenceTable, resource, fencingToken) == 0) {
            List<Long> accepted = jdbc.queryForList("SELECT token FROM " + fenceTable + " WHERE resource = ? FOR UPDATE",
                    Long.class, resource);
            throw new StaleFencingTokenException("fence row '" + resource + "'", fencingToken, largerThan(fencingToken, accepted));
        }
    }

    /**
     * Claims {@code resource}'s fence row with the token of the {@code @DistributedLock} method running on this thread.
     *
     * @throws IllegalStateException when no locked method runs on this thread, or no transaction is active
     */
    public void claim(String resource) {
        claim(resource, LockContext.current().fencingToken());
    }

    /** {@code CREATE TABLE IF NOT EXISTS} of the fence table (PostgreSQL, H2, MySQL and MariaDB read it alike). */
    public String fenceTableDdl() {
        return "CREATE TABLE IF NOT EXISTS " + fenceTable + " (resource VARCHAR(" + MAX_RESOURCE_LENGTH
                + ") PRIMARY KEY, token BIGINT NOT NULL)";
    }

    /** Creates the fence table when it does not exist. */
    public void createFenceTable() {
        jdbc.execute(fenceTableDdl());
    }

    /** The dialect in use, detected from the database on first use unless given. */
    public FenceDialect dialect() {
        FenceDialect known = dialect;
        if (known == null) {
            known = FenceDialect.of(jdbc.execute((ConnectionCallback<String>) c -> c.getMetaData().getDatabaseProductName()));
            dialect = known;
        }
        return known;
    }

    /** The largest of {@code tokens} when it is above {@code offered}, else null: a read that saw no larger token saw too little. */
    static Long largerThan(long offered, List<? extends Number> tokens) {
        long largest = Long.MIN_VALUE;
        for (Number token : tokens) {
            if (token != null) {
                largest = Math.max(largest, token.longValue());
            }
        }
        return largest > offered ? largest : null;
    }

    static String identifier(String name, String what) {
        if (name == null || !IDENTIFIER.matcher(name).matches()) {
            throw new IllegalArgumentException(what + " must be a plain SQL identifier (letters, digits, '_', "
                    + "optionally schema-qualified), got " + (name == null ? "null" : "'" + name + "'"));
        }
        return name;
    }
}
