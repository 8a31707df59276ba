package dev.dlock.jdbc;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.SQLFeatureNotSupportedException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.Executor;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.regex.Pattern;

import javax.sql.DataSource;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import dev.dlock.core.spi.BackendCapabilities;
import dev.dlock.core.LockKind;
import dev.dlock.core.spi.AcquireResult;
import dev.dlock.core.spi.LeaseRenewal;
import dev.dlock.core.spi.LeaseExtension;
import dev.dlock.core.spi.LockBackend;
import dev.dlock.core.LockBackendException;
import dev.dlock.core.spi.ReleaseResult;
import dev.dlock.core.spi.RenewalGrouping;
import dev.dlock.core.spi.RenewalResult;
import dev.dlock.core.spi.StoreNode;

/**
 * The lock store in a relational database (PostgreSQL, MariaDB, MySQL, H2) over a plain {@link DataSource}: one row
 * per key, every write one compare-owner statement on a connection of its own in autocommit mode, so a lock never
 * joins the caller's transaction. Give it the pool itself, not a transaction-aware proxy. Only the database's clock
 * times leases; fencing tokens come from a sequence (on {@link JdbcDialect#MYSQL}, a per-row count above a floor);
 * free rows are deleted by {@link #cleanUp()}; failures surface as {@link LockBackendException}.
 * Details (statements, tokens, cleanup, timeouts): docs/jdbc.md.
 */
public final class JdbcLockBackend implements LockBackend, RenewalGrouping, LeaseExtension {

    private static final Logger log = LoggerFactory.getLogger(JdbcLockBackend.class);

    /** The table used when none is configured. */
    public static final String DEFAULT_TABLE_NAME = "dlock_locks";
    /** The statement timeout when none is configured. */
    public static final Duration DEFAULT_QUERY_TIMEOUT = Duration.ofSeconds(5);
    /** The most leases one renew statement carries when nothing else is configured. */
    public static final int DEFAULT_RENEWAL_BATCH_SIZE = 100;
    /** The largest allowed renewal batch: two parameters per lease stay well inside every driver's limit. */
    public static final int MAX_RENEWAL_BATCH_SIZE = 10_000;
    /** How long a free row is kept when nothing else is configured. */
    public static final Duration DEFAULT_IDLE_ROW_RETENTION = Duration.ofHours(1);
    /** The shortest allowed retention of free rows. */
    public static final Duration MIN_IDLE_ROW_RETENTION = Duration.ofMinutes(1);
    /** How often idle rows are swept when nothing else is configured. */
    public static final Duration DEFAULT_CLEANUP_INTERVAL = Duration.ofMinutes(10);
    /** How many rows one cleanup statement deletes at most. */
    public static final int CLEANUP_BATCH_SIZE = 1_000;
    /** How many cleanup statements one cleanup run issues at most. */
    public static final int CLEANUP_BATCHES_PER_RUN = 20;

    private static final Pattern IDENTIFIER = Pattern.compile("[A-Za-z_][A-Za-z0-9_]{0,47}");
    private static final String DUPLICATE_KEY_STATE = "23505";
    private static final String DEADLOCK_STATE = "40001";
    private static final int ACQUIRE_ATTEMPTS = 3;
    /** How far above the value it read an H2 raise moves the sequence at least (see {@link #raiseTokenFloor}). */
    static final long TOKEN_FLOOR_MARGIN_MICROS = 1_000_000;
    private static final int LATE_RELEASE_QUEUE = 1_000;
    private static final Executor DIRECT = Runnable::run;

    private final DataSource dataSource;
    private final JdbcDialect dialect;
    private final String table;
    private final LockStatements sql;
    private final int queryTimeoutSeconds;
    private final int networkTimeoutMillis;
    private final int renewalBatchSize;
    private final long idleRowRetentionMillis;
    private final PgReleaseNotices releaseNotices;
    private final ScheduledExecutorService cleaner;
    /** One thread, started when needed, for the best-effort release after a failed acquire. */
    private final ThreadPoolExecutor lateReleases;
    private final AtomicBoolean cleaning = new AtomicBoolean();
    /**
     * The token floor this backend raised before its first acquisition (see {@link #raiseTokenFloor}); on MySQL the
     * least token a row it takes gets, elsewhere 0 once raised (the sequence carries it). Negative until raised.
     */
    private volatile long tokenFloor = -1;
    /** Test hook: runs between reading the sequence and moving it in {@link #raiseTokenFloor}. */
    private volatile Runnable afterTokenFloorRead = () -> { };
    /** Cleared when the driver cannot set a network timeout (H2 in-process), so it is not asked again. */
    private volatile boolean networkTimeoutSupported = true;

    private JdbcLockBackend(Builder builder, JdbcDialect dialect) {
        this.dataSource = builder.dataSource;
        this.dialect = dialect;
        this.table = builder.tableName;
        this.sql = LockStatements.of(dialect, table);
        this.queryTimeoutSeconds = (int) Math.max(1, builder.queryTimeout.toSeconds());
        this.networkTimeoutMillis = (int) Math.min(Integer.MAX_VALUE, builder.queryTimeout.toMillis() + 2_000);
        this.renewalBatchSize = builder.renewalBatchSize;
        this.idleRowRetentionMillis = builder.idleRowRetention.toMillis();
        this.releaseNotices = dialect == JdbcDialect.POSTGRESQL && builder.releaseNotices && PgReleaseNotices.driverPresent()
                ? new PgReleaseNotices(dataSource, this::channelOf, networkTimeoutMillis)
                : null;
        this.lateReleases = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new ArrayBlockingQueue<>(LATE_RELEASE_QUEUE),
                task -> {
                    Thread thread = new Thread(task, "dlock-jdbc-release");
                    thread.setDaemon(true);
                    return thread;
                }, new ThreadPoolExecutor.DiscardPolicy());
        lateReleases.allowCoreThreadTimeOut(true);
        if (builder.cleanupInterval.isZero()) {
            this.cleaner = null;
        } else {
            this.cleaner = Executors.newSingleThreadScheduledExecutor(task -> {
                Thread thread = new Thread(task, "dlock-jdbc-cleanup");
                thread.setDaemon(true);
                return thread;
            });
            long interval = builder.cleanupInterval.toMillis();
            cleaner.scheduleWithFixedDelay(this::cleanUpQuietly, interval, interval, TimeUnit.MILLISECONDS);
        }
    }

    /** Starts configuring a backend over {@code dataSource}, which the backend uses but never closes. */
    public static Builder builder(DataSource dataSource) {
        return new Builder(dataSource);
    }

    /**
     * Takes {@code key} in one statement that writes the row only when it is free, run out or already
     * {@code owner}'s (a retried call: lease extended, fresh token), or reports the holder's remaining lease;
     * a key without a row costs a second statement (the first creates the row).
     */
    @Override
    public AcquireResult tryAcquire(LockKind kind, String key, String owner, long leaseMillis) {
        BackendCapabilities.requireExclusive(this, kind);
        requireOwner(owner);
        requirePositive(leaseMillis, "leaseMillis");
        for (int attempt = 1; ; attempt++) {
            boolean sent = false;
            try (Connection connection = connection()) {
                sent = true;
                return acquireOnce(connection, key, owner, leaseMillis);
            } catch (SQLException e) {
                if (attempt < ACQUIRE_ATTEMPTS && takesAnotherAttempt(e)) {
                    continue;
                }
                if (sent) {
                    // The statement may have run before its reply was lost; do not leave the key locked until the lease ends.
                    releaseSoon(key, owner);
                }
                throw failure("tryAcquire", key, e);
            }
        }
    }

    /** Whether a failed acquire changed nothing and may simply run again. */
    private boolean takesAnotherAttempt(SQLException e) {
        return switch (dialect) {
            // H2's MERGE lets two first acquisitions of a key both try the insert; the loser tries again.
            case H2 -> DUPLICATE_KEY_STATE.equals(e.getSQLState());
            // InnoDB may pick one of two transactions creating the same key as a deadlock victim and roll it back.
            case MYSQL -> DEADLOCK_STATE.equals(e.getSQLState());
            case POSTGRESQL, MARIADB -> false;
        };
    }

    private AcquireResult acquireOnce(Connection connection, String key, String owner, long leaseMillis) throws SQLException {
        if (tokenFloor < 0) {
            raiseTokenFloor(connection);
        }
        if (sql.counting != null) {
            return acquireCountingInTheRow(connection, key, owner, leaseMillis);
        }
        Optional<AcquireResult> answer = runAcquire(connection, key, owner, leaseMillis);
        if (answer.isEmpty()) {
            // The key had no row and now has a free one, which this second run takes.
            answer = runAcquire(connection, key, owner, leaseMillis);
        }
        return answer.isPresent() ? answer.get() : createAndTakeInOneTransaction(connection, key, owner, leaseMillis);
    }

    /**
     * For a row that cleanup deleted between its creation and the run meant to take it (it looked free
     * for the whole retention): inside one transaction the row the statement creates stays locked until
     * the next run takes it, so no one can delete it in between.
     */
    private AcquireResult createAndTakeInOneTransaction(Connection connection, String key, String owner, long leaseMillis)
            throws SQLException {
        log.debug("The new row of key '{}' was deleted before it was taken; creating and taking it in one transaction", key);
        return inOneTransaction(connection, () -> {
            Optional<AcquireResult> answer = runAcquire(connection, key, owner, leaseMillis);
            if (answer.isEmpty()) {
                answer = runAcquire(connection, key, owner, leaseMillis);
            }
            if (answer.isEmpty()) {
                throw new SQLException("the acquire statement created the row of key '" + key + "' twice in one transaction");
            }
            return answer.get();
        });
    }

    /**
     * Raises the sequence to the database's clock in microseconds if it is below, before this backend's first
     * acquisition: every token after it is at least the clock at this backend's start, as Redis's tokens are, so a
     * guard that accepted tokens from another store (or from this one before the floor) keeps accepting. The sequence
     * only ever rises, so no token is lower than one issued before. On MySQL the clock read here is bound into every
     * take and new row instead, above the row's own count and the floor table, which keep tokens increasing per key.
     * Runs again when it failed (the acquisition fails with it).
     * <p>
     * Moving a sequence to a number can lower it when two backends start at once: one reads, the other moves the
     * sequence to its later clock and issues tokens, then the first moves it back. MariaDB's SETVAL never lowers. On
     * PostgreSQL (a transaction-scoped advisory lock) and H2 (the lock of a row of the lock table) raisers take turns,
     * and move the sequence at least {@value #TOKEN_FLOOR_MARGIN_MICROS} above the value they read: acquisitions go on
     * issuing tokens between the read and the move, but never that many. (A table lock that held acquisitions off
     * would queue every acquisition behind a raise that waits for a slow statement.)
     */
    private void raiseTokenFloor(Connection connection) throws SQLException {
        switch (dialect) {
            case MARIADB -> moveSequenceBelowClock(connection, 0);
            case POSTGRESQL -> inOneTransaction(connection, () -> {
                try (PreparedStatement statement = prepare(connection, sql.takeRaiseTurn);
                     ResultSet ignored = statement.executeQuery()) {
                    // the transaction holds the advisory lock until it ends
                }
                return moveSequenceBelowClock(connection, TOKEN_FLOOR_MARGIN_MICROS);
            });
            case H2 -> raiseH2TokenFloor(connection);
            case MYSQL -> {
                try (PreparedStatement statement = prepare(connection, sql.raiseFloor); ResultSet row = statement.executeQuery()) {
                    row.next();
                    tokenFloor = row.getLong(1);
                }
                return;
            }
        }
        tokenFloor = 0;
    }

    /** H2: takes the turn row (creating it when missing), then moves the sequence with the margin. */
    private void raiseH2TokenFloor(Connection connection) throws SQLException {
        for (int attempt = 1; ; attempt++) {
            try (PreparedStatement statement = prepare(connection, sql.createTurnRow)) {
                statement.setString(1, LockStatements.TOKEN_FLOOR_TURN_KEY);
                statement.setString(2, LockStatements.TOKEN_FLOOR_TURN_KEY);
                statement.executeUpdate();
            } catch (SQLException e) {
                if (!DUPLICATE_KEY_STATE.equals(e.getSQLState())) {
                    throw e; // a duplicate is another backend creating the row at the same time
                }
            }
            boolean raised = inOneTransaction(connection, () -> {
                try (PreparedStatement statement = prepare(connection, sql.takeTurnRow)) {
                    statement.setString(1, LockStatements.TOKEN_FLOOR_TURN_KEY);
                    try (ResultSet row = statement.executeQuery()) {
                        if (!row.next()) {
                            return false; // cleanup deleted the idle row in between
                        }
                    }
                }
                return moveSequenceBelowClock(connection, TOKEN_FLOOR_MARGIN_MICROS);
            });
            if (raised) {
                return;
            }
            if (attempt == 3) {
                throw new SQLException("the token floor's turn row of " + table + " was deleted " + attempt + " times");
            }
        }
    }

    /**
     * Reads the sequence's next value and the clock and, when the sequence is below, moves it to the clock or
     * {@code marginMicros} above the value read, whichever is higher. Returns true (done).
     */
    private boolean moveSequenceBelowClock(Connection connection, long marginMicros) throws SQLException {
        long next;
        long clock;
        try (PreparedStatement statement = prepare(connection, sql.raiseFloor); ResultSet row = statement.executeQuery()) {
            row.next();
            next = row.getLong(1);
            clock = row.getLong(2);
        }
        afterTokenFloorRead.run();
        if (next < clock) {
            try (PreparedStatement statement = prepare(connection, sql.moveSequence(Math.max(clock, next + marginMicros)))) {
                statement.execute();
            }
        }
        return true;
    }

    /**
     * The MySQL token path: the key's existing row is taken by an UPDATE that adds one to its token under the
     * row's lock, and read back (MySQL has no {@code RETURNING}); a key without a row gets one in a transaction
     * that starts it above the floor (see {@link LockStatements.RowCounting}).
     */
    private AcquireResult acquireCountingInTheRow(Connection connection, String key, String owner, long leaseMillis)
            throws SQLException {
        int matched;
        try (PreparedStatement statement = prepare(connection, sql.acquire)) {
            sql.bindAcquire(statement, key, owner, leaseMillis, tokenFloor);
            matched = statement.executeUpdate();
        }
        // Both drivers count matched rows by default. One set to count changed rows answers 0 for a held row too;
        // that only costs the transaction below, which takes or reports an existing row the same way.
        if (matched > 0) {
            Optional<AcquireResult> answer = readBack(connection, sql.counting.readBack(), key, owner);
            if (answer.isPresent()) {
                return answer.get();
            }
        }
        return inOneTransaction(connection, () -> {
            long floor;
            try (PreparedStatement statement = prepare(connection, sql.counting.floor());
                 ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    throw new SQLException("the token floor row of " + table + LockStatements.FLOOR_SUFFIX
                            + " is missing; apply " + dialect.schemaResource());
                }
                floor = row.getLong(1);
            }
            try (PreparedStatement statement = prepare(connection, sql.counting.create())) {
                sql.bindCreate(statement, key, owner, Math.max(floor + 1, tokenFloor), leaseMillis, tokenFloor);
                statement.executeUpdate();
            }
            return readBack(connection, sql.counting.lockedReadBack(), key, owner)
                    .orElseThrow(() -> new SQLException("the row of key '" + key + "' is missing right after its upsert"));
        });
    }

    /** The key's state as the MySQL read-back shows it: acquired when {@code owner} holds it, else held; empty without a row. */
    private Optional<AcquireResult> readBack(Connection connection, String readBackSql, String key, String owner)
            throws SQLException {
        try (PreparedStatement statement = prepare(connection, readBackSql)) {
            statement.setString(1, key);
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    return Optional.empty();
                }
                // Only this owner's own calls write a row it owns, so the token is the one its statement wrote.
                return Optional.of(owner.equals(row.getString(1)) ? new AcquireResult.Acquired(row.getLong(2))
                        : held(row.getLong(3), row.wasNull()));
            }
        }
    }

    /** Work on one connection that must commit as a whole. */
    interface TransactionWork<T> {
        T run() throws SQLException;
    }

    /** Runs {@code work} in one transaction on {@code connection} and leaves it in autocommit mode again, committed or rolled back. */
    static <T> T inOneTransaction(Connection connection, TransactionWork<T> work) throws SQLException {
        connection.setAutoCommit(false);
        T result;
        try {
            result = work.run();
            connection.commit();
        } catch (SQLException | RuntimeException e) {
            try {
                connection.rollback();
                connection.setAutoCommit(true);
            } catch (SQLException cleanup) {
                e.addSuppressed(cleanup);
            }
            throw e;
        }
        connection.setAutoCommit(true);
        return result;
    }

    /** One run of the acquire statement: the answer, or empty when it only created the key's row (free, no token yet). */
    private Optional<AcquireResult> runAcquire(Connection connection, String key, String owner, long leaseMillis)
            throws SQLException {
        try (PreparedStatement statement = prepare(connection, sql.acquire)) {
            sql.bindAcquire(statement, key, owner, leaseMillis, tokenFloor);
            try (ResultSet row = statement.executeQuery()) {
                if (!row.next()) {
                    if (sql.remaining == null) {
                        throw new SQLException("the acquire statement returned no row for key '" + key + "'");
                    }
                    // H2 returns the changed row only: none means someone else holds the key.
                    return Optional.of(heldFor(connection, key));
                }
                String holder = row.getString(1);
                long token = row.getLong(2);
                if (owner.equals(holder)) {
                    return Optional.of(new AcquireResult.Acquired(token));
                }
                if (holder == null && !row.wasNull()) {
                    return Optional.empty();
                }
                return Optional.of(held(row.getLong(3), row.wasNull()));
            }
        }
    }

    private AcquireResult heldFor(Connection connection, String key) throws SQLException {
        try (PreparedStatement statement = prepare(connection, sql.remaining)) {
            statement.setString(1, key);
            try (ResultSet row = statement.executeQuery()) {
                return row.next() ? held(row.getLong(1), row.wasNull()) : new AcquireResult.Held(-1);
            }
        }
    }

    private static AcquireResult held(long remainingMillis, boolean unknown) {
        return new AcquireResult.Held(unknown ? -1 : Math.max(0, remainingMillis));
    }

    /**
     * Clears the owner of {@code key} if, and only if, {@code owner} holds it (the row and its token
     * stay), and on PostgreSQL notifies waiters in the same statement. When nothing was released, the
     * key's row tells a repeated release ({@link ReleaseResult#ALREADY_FREE}: free, last token ours)
     * from a lost lease.
     */
    @Override
    public ReleaseResult release(LockKind kind, String key, String owner, long fencingToken) {
        BackendCapabilities.requireExclusive(this, kind);
        requireOwner(owner);
        try (Connection connection = connection()) {
            if (releaseOnce(connection, key, owner)) {
                return ReleaseResult.RELEASED;
            }
            try (PreparedStatement statement = prepare(connection, sql.state)) {
                statement.setString(1, key);
                try (ResultSet row = statement.executeQuery()) {
                    boolean repeated = row.next() && row.getLong(1) == fencingToken && row.getBoolean(2);
                    return repeated ? ReleaseResult.ALREADY_FREE : ReleaseResult.NOT_OWNER;
                }
            }
        } catch (SQLException e) {
            throw failure("release", key, e);
        }
    }

    private boolean releaseOnce(Connection connection, String key, String owner) throws SQLException {
        try (PreparedStatement statement = prepare(connection, sql.release)) {
            statement.setString(1, key);
            statement.setString(2, owner);
            if (sql.releaseReturnsRows) {
                statement.setString(3, channelOf(key));
                try (ResultSet rows = statement.executeQuery()) {
                    return rows.next();
                }
            }
            return statement.executeUpdate() > 0;
        }
    }

    /**
     * Releases {@code owner}'s row of {@code key} on the release thread, best effort. Not on the caller's thread: with
     * the database down it would wait for the pool a second time, doubling how long a failed call takes. A release the
     * queue has no room for is dropped: the engine releases the owner of a failed acquire again anyway.
     */
    private void releaseSoon(String key, String owner) {
        lateReleases.execute(() -> {
            try (Connection connection = connection()) {
                releaseOnce(connection, key, owner);
            } catch (SQLException | RuntimeException e) {
                log.debug("Best-effort release of key '{}' after a failed acquire also failed: {}", key, e.toString());
            }
        });
    }

    /**
     * Extends every lease of the batch whose owner matches and whose lease still runs, in one UPDATE
     * per distinct lease length (one for a manager's watchdog). Only when fewer rows matched than
     * leases were sent does a second statement read the unmatched keys, to tell EXPIRED from TAKEN.
     */
    @Override
    public List<RenewalResult> renew(List<LeaseRenewal> batch) {
        Objects.requireNonNull(batch, "batch");
        if (batch.isEmpty()) {
            return List.of();
        }
        if (batch.size() > renewalBatchSize) {
            throw new IllegalArgumentException("renew batch has " + batch.size()
                    + " entries, more than renewalBatchSize " + renewalBatchSize);
        }
        Map<Long, List<Integer>> byLease = new LinkedHashMap<>();
        for (int i = 0; i < batch.size(); i++) {
            LeaseRenewal renewal = batch.get(i);
            requireOwner(renewal.owner());
            requirePositive(renewal.leaseMillis(), "leaseMillis");
            byLease.computeIfAbsent(renewal.leaseMillis(), lease -> new ArrayList<>()).add(i);
        }
        RenewalResult[] results = new RenewalResult[batch.size()];
        try (Connection connection = connection()) {
            for (Map.Entry<Long, List<Integer>> group : byLease.entrySet()) {
                renewGroup(connection, batch, group.getKey(), group.getValue(), results);
            }
        } catch (SQLException e) {
            throw LockBackendException.storeFailure("JDBC renew of " + batch.size() + " keys starting with '"
                    + batch.get(0).key() + "' failed", e);
        }
        return List.of(results);
    }

    private void renewGroup(Connection connection, List<LeaseRenewal> batch, long leaseMillis, List<Integer> positions,
                            RenewalResult[] results) throws SQLException {
        int renewed;
        try (PreparedStatement statement = prepare(connection, sql.renew(positions.size()))) {
            int parameter = 1;
            statement.setLong(parameter++, leaseMillis);
            for (int position : positions) {
                statement.setString(parameter++, batch.get(position).key());
                statement.setString(parameter++, batch.get(position).owner());
            }
            renewed = statement.executeUpdate();
        }
        if (renewed == positions.size()) {
            positions.forEach(position -> results[position] = RenewalResult.RENEWED);
            return;
        }
        Map<String, Holder> holders = new HashMap<>();
        try (PreparedStatement statement = prepare(connection, sql.holders(positions.size()))) {
            int parameter = 1;
            for (int position : positions) {
                statement.setString(parameter++, batch.get(position).key());
            }
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    holders.put(rows.getString(1), new Holder(rows.getString(2), rows.getBoolean(3)));
                }
            }
        }
        for (int position : positions) {
            LeaseRenewal renewal = batch.get(position);
            Holder holder = holders.get(renewal.key());
            // A lease that is ours and still runs now also ran when the UPDATE looked at it: only we extend it.
            results[position] = holder == null || holder.owner == null || !holder.live ? RenewalResult.EXPIRED
                    : holder.owner.equals(renewal.owner()) ? RenewalResult.RENEWED : RenewalResult.TAKEN;
        }
    }

    /**
     * Gives {@code owner}'s live lease to {@code retiredOwner} with {@code keepMillis} left, in one UPDATE; when it
     * matched nothing, one read tells a repeat (the retired owner holds it) from an expired or taken key.
     */
    @Override
    public RenewalResult shorten(LockKind kind, String key, String owner, String retiredOwner, long keepMillis) {
        return newTerm("shortening", kind, key, owner, retiredOwner, keepMillis);
    }

    /**
     * Gives {@code owner}'s live lease to {@code nextOwner} for {@code leaseMillis} from now (the database's clock), in
     * the UPDATE a shortening runs: the row's owner rewritten, so no late statement of {@code owner} matches it; the
     * token column stays the hold's.
     */
    @Override
    public RenewalResult extend(LockKind kind, String key, String owner, String nextOwner, long leaseMillis) {
        return newTerm("extension", kind, key, owner, nextOwner, leaseMillis);
    }

    /** One owner-checked UPDATE that gives {@code owner}'s live lease to {@code nextOwner} for {@code millis} from now. */
    private RenewalResult newTerm(String operation, LockKind kind, String key, String owner, String nextOwner, long millis) {
        BackendCapabilities.requireExclusive(this, kind);
        requireOwner(owner);
        requireOwner(nextOwner);
        requirePositive(millis, "leaseMillis");
        try (Connection connection = connection()) {
            try (PreparedStatement statement = prepare(connection, sql.shorten())) {
                statement.setString(1, nextOwner);
                statement.setLong(2, millis);
                statement.setString(3, key);
                statement.setString(4, owner);
                if (statement.executeUpdate() == 1) {
                    return RenewalResult.RENEWED;
                }
            }
            try (PreparedStatement statement = prepare(connection, sql.holders(1))) {
                statement.setString(1, key);
                try (ResultSet rows = statement.executeQuery()) {
                    if (!rows.next() || rows.getString(2) == null || !rows.getBoolean(3)) {
                        return RenewalResult.EXPIRED;
                    }
                    return nextOwner.equals(rows.getString(2)) ? RenewalResult.RENEWED : RenewalResult.TAKEN;
                }
            }
        } catch (SQLException e) {
            throw LockBackendException.storeFailure("JDBC " + operation + " of key '" + key + "' failed", e);
        }
    }

    /** Who holds a key and whether the lease runs, as read after a renewal. */
    private record Holder(String owner, boolean live) {
    }

    /**
     * Renewals grouped by this backend (one database, batches of the configured size); on PostgreSQL with its driver on
     * the class path, release notices by LISTEN/NOTIFY over one connection of this backend (taken from the pool on the
     * first subscription and kept; elsewhere waiters poll); who holds a key (the row's owner and the lease the database
     * gives it) and an operator's forced release; extensions of a fixed lease (one UPDATE, as a shortening).
     */
    @Override
    public BackendCapabilities capabilities() {
        return BackendCapabilities.DEFAULT.withRenewalGrouping(this).withReleaseNotices(releaseNotices)
                .withHolderInspection(new JdbcHolderInspection(this)).withLeaseExtension(this);
    }

    /** Always {@link StoreNode#SINGLE}: one database serves every key. */
    @Override
    public StoreNode nodeOf(String key) {
        return StoreNode.SINGLE;
    }

    /** The configured {@code renewalBatchSize}. */
    @Override
    public int maxBatchSize() {
        return renewalBatchSize;
    }

    /**
     * One round trip on a pooled connection, in nanoseconds: a query on the lock table that reads no row,
     * so that a missing table (or a user without access to it) fails the ping, not only the first lock.
     */
    @Override
    public long ping() {
        long start = System.nanoTime();
        try (Connection connection = connection();
             PreparedStatement statement = prepare(connection, sql.ping);
             ResultSet row = statement.executeQuery()) {
            row.next();
        } catch (SQLException e) {
            throw LockBackendException.storeFailure("JDBC ping failed", e);
        }
        return System.nanoTime() - start;
    }

    /**
     * Deletes rows free for longer than the retention, in batches of {@value #CLEANUP_BATCH_SIZE},
     * at most {@value #CLEANUP_BATCHES_PER_RUN} batches; returns how many rows went. Held rows and
     * rows released within the retention are never touched, and no token is lowered (see the class
     * comment). Runs on its own every cleanup interval; call it to clean up now.
     */
    public int cleanUp() {
        int deleted = 0;
        try (Connection connection = connection()) {
            for (int batch = 0; batch < CLEANUP_BATCHES_PER_RUN; batch++) {
                int rows = sql.counting != null ? sweepRaisingTheFloor(connection) : sweep(connection);
                deleted += rows;
                if (rows < CLEANUP_BATCH_SIZE) {
                    break;
                }
            }
        } catch (SQLException e) {
            throw LockBackendException.storeFailure("JDBC cleanup of idle rows in " + table + " failed", e);
        }
        return deleted;
    }

    private int sweep(Connection connection) throws SQLException {
        try (PreparedStatement statement = prepare(connection, sql.sweep)) {
            statement.setLong(1, idleRowRetentionMillis);
            statement.setInt(2, CLEANUP_BATCH_SIZE);
            if (dialect == JdbcDialect.POSTGRESQL) {
                statement.setLong(3, idleRowRetentionMillis);
            }
            return statement.executeUpdate();
        }
    }

    /**
     * One MySQL cleanup batch: finds the largest token among the rows it may delete, then raises the floor to it
     * and deletes those rows whose token is not above it, in one transaction. A row that became deletable after
     * the first read with a larger token stays for the next batch.
     */
    private int sweepRaisingTheFloor(Connection connection) throws SQLException {
        long highest;
        try (PreparedStatement statement = prepare(connection, sql.counting.idleMaxToken())) {
            statement.setLong(1, idleRowRetentionMillis);
            statement.setInt(2, CLEANUP_BATCH_SIZE);
            try (ResultSet row = statement.executeQuery()) {
                row.next();
                highest = row.getLong(1);
                if (row.wasNull()) {
                    return 0;
                }
            }
        }
        return inOneTransaction(connection, () -> {
            try (PreparedStatement statement = prepare(connection, sql.counting.raiseFloor())) {
                statement.setLong(1, highest);
                statement.executeUpdate();
            }
            try (PreparedStatement statement = prepare(connection, sql.sweep)) {
                statement.setLong(1, idleRowRetentionMillis);
                statement.setLong(2, highest);
                statement.setInt(3, CLEANUP_BATCH_SIZE);
                return statement.executeUpdate();
            }
        });
    }

    private void cleanUpQuietly() {
        if (!cleaning.compareAndSet(false, true)) {
            return;
        }
        try {
            int deleted = cleanUp();
            log.debug("dlock JDBC cleanup deleted {} idle rows from {}", deleted, table);
        } catch (RuntimeException e) {
            log.warn("dlock JDBC cleanup of idle rows failed; next attempt in one interval: {}", e.toString());
        } finally {
            cleaning.set(false);
        }
    }

    /** The dialect in use, detected or configured. */
    public JdbcDialect dialect() {
        return dialect;
    }

    /** The lock table's name. */
    public String tableName() {
        return table;
    }

    /** Stops the notice thread (closing its connection), the cleanup and the release threads; the data source stays open. */
    @Override
    public void close() {
        if (releaseNotices != null) {
            releaseNotices.close();
        }
        if (cleaner != null) {
            cleaner.shutdownNow();
        }
        lateReleases.shutdownNow();
    }

    /** The notice channel of {@code key}: a hash, so any key fits PostgreSQL's 63-byte identifiers. */
    String channelOf(String key) {
        try {
            MessageDigest digest = MessageDigest.getInstance("SHA-256");
            digest.update(table.getBytes(StandardCharsets.UTF_8));
            digest.update((byte) 0);
            byte[] hash = digest.digest(key.getBytes(StandardCharsets.UTF_8));
            return "dlock_" + HexFormat.of().formatHex(hash, 0, 20);
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("SHA-256 is missing from this JVM", e);
        }
    }

    Connection connection() throws SQLException {
        Connection connection = dataSource.getConnection();
        try {
            if (!connection.getAutoCommit()) {
                connection.setAutoCommit(true);
            }
            if (networkTimeoutSupported) {
                try {
                    connection.setNetworkTimeout(DIRECT, networkTimeoutMillis);
                } catch (SQLFeatureNotSupportedException | UnsupportedOperationException e) {
                    networkTimeoutSupported = false;
                }
            }
            return connection;
        } catch (SQLException | RuntimeException e) {
            connection.close();
            throw e;
        }
    }

    /** Sets the test hook that runs between reading the sequence and moving it when the token floor is raised. */
    void afterTokenFloorRead(Runnable hook) {
        this.afterTokenFloorRead = hook;
    }

    PreparedStatement prepare(Connection connection, String statementSql) throws SQLException {
        PreparedStatement statement = connection.prepareStatement(statementSql);
        statement.setQueryTimeout(queryTimeoutSeconds);
        return statement;
    }

    LockBackendException failure(String operation, String key, SQLException e) {
        return LockBackendException.storeFailure("JDBC " + operation + " of key '" + key + "' in " + table + " failed", e);
    }

    private static void requireOwner(String owner) {
        if (owner == null || owner.isEmpty()) {
            throw new IllegalArgumentException("owner must not be null or empty");
        }
    }

    private static void requirePositive(long value, String name) {
        if (value <= 0) {
            throw new IllegalArgumentException(name + " must be positive, got " + value);
        }
    }

    private static JdbcDialect detectDialect(DataSource dataSource) {
        try (Connection connection = dataSource.getConnection()) {
            return JdbcDialect.detect(connection.getMetaData());
        } catch (SQLException e) {
            throw LockBackendException.storeFailure("dlock JDBC store: cannot connect to detect the database dialect (set "
                    + "dialect(...) to start without a connection)", e);
        }
    }

    /** Configures a {@link JdbcLockBackend}; every setting is validated when set. */
    public static final class Builder {

        private final DataSource dataSource;
        private String tableName = DEFAULT_TABLE_NAME;
        private JdbcDialect dialect;
        private boolean createSchema;
        private Duration queryTimeout = DEFAULT_QUERY_TIMEOUT;
        private int renewalBatchSize = DEFAULT_RENEWAL_BATCH_SIZE;
        private Duration idleRowRetention = DEFAULT_IDLE_ROW_RETENTION;
        private Duration cleanupInterval = DEFAULT_CLEANUP_INTERVAL;
        private boolean releaseNotices = true;

        private Builder(DataSource dataSource) {
            if (dataSource == null) {
                throw new IllegalArgumentException("dataSource must not be null");
            }
            this.dataSource = dataSource;
        }

        /**
         * The lock table (default {@code dlock_locks}), optionally {@code schema.table}; letters, digits and
         * underscores, at most 48 characters per part. Its sequence is the table name plus {@code _token_seq}
         * (MySQL: its token floor table, the table name plus {@code _token_floor}).
         */
        public Builder tableName(String tableName) {
            if (tableName == null) {
                throw new IllegalArgumentException("tableName must not be null");
            }
            String[] parts = tableName.split("\\.", -1);
            boolean valid = parts.length <= 2;
            for (String part : parts) {
                valid &= IDENTIFIER.matcher(part).matches();
            }
            if (!valid) {
                throw new IllegalArgumentException("tableName must be [schema.]table of letters, digits and underscores "
                        + "(at most 48 characters each, not starting with a digit), got '" + tableName + "'");
            }
            this.tableName = tableName;
            return this;
        }

        /** The database's dialect; detected from the connection's metadata when not set (which connects once at build). */
        public Builder dialect(JdbcDialect dialect) {
            if (dialect == null) {
                throw new IllegalArgumentException("dialect must not be null");
            }
            this.dialect = dialect;
            return this;
        }

        /**
         * Whether {@link #build()} creates the sequence (MySQL: the floor table) and the lock table when missing, as
         * {@link #applySchema()} does (default false: apply the shipped DDL yourself).
         */
        public Builder createSchema(boolean createSchema) {
            this.createSchema = createSchema;
            return this;
        }

        /** The timeout of every statement (default 5 s, whole seconds, 1 s to 30 s); the network timeout is 2 s longer. */
        public Builder queryTimeout(Duration queryTimeout) {
            if (queryTimeout == null || queryTimeout.toMillis() < 1_000 || queryTimeout.toMillis() > 30_000
                    || queryTimeout.toMillis() % 1_000 != 0) {
                throw new IllegalArgumentException("queryTimeout must be whole seconds between 1 s and 30 s, got " + queryTimeout);
            }
            this.queryTimeout = queryTimeout;
            return this;
        }

        /** The most leases one renew statement carries (default 100, at most 10,000). */
        public Builder renewalBatchSize(int renewalBatchSize) {
            if (renewalBatchSize < 1 || renewalBatchSize > MAX_RENEWAL_BATCH_SIZE) {
                throw new IllegalArgumentException("renewalBatchSize must be between 1 and " + MAX_RENEWAL_BATCH_SIZE
                        + ", got " + renewalBatchSize);
            }
            this.renewalBatchSize = renewalBatchSize;
            return this;
        }

        /** How long a free row is kept before cleanup may delete it (default 1 h, at least 1 min). */
        public Builder idleRowRetention(Duration idleRowRetention) {
            if (idleRowRetention == null || idleRowRetention.compareTo(MIN_IDLE_ROW_RETENTION) < 0) {
                throw new IllegalArgumentException("idleRowRetention must be at least " + MIN_IDLE_ROW_RETENTION
                        + ", got " + idleRowRetention);
            }
            this.idleRowRetention = idleRowRetention;
            return this;
        }

        /** How often idle rows are cleaned up (default 10 min); {@link Duration#ZERO} turns the background cleanup off. */
        public Builder cleanupInterval(Duration cleanupInterval) {
            if (cleanupInterval == null || cleanupInterval.isNegative()
                    || !cleanupInterval.isZero() && cleanupInterval.toMillis() < 1_000) {
                throw new IllegalArgumentException("cleanupInterval must be zero (off) or at least 1 s, got " + cleanupInterval);
            }
            this.cleanupInterval = cleanupInterval;
            return this;
        }

        /** Whether waiters on PostgreSQL listen for release notices (default true); false makes them poll. */
        public Builder releaseNotices(boolean releaseNotices) {
            this.releaseNotices = releaseNotices;
            return this;
        }

        /**
         * Creates the backend: detects the dialect unless set (one connection), and creates the schema
         * when asked. Throws {@link LockBackendException} when the database cannot be reached for either.
         */
        public JdbcLockBackend build() {
            JdbcDialect chosen = createSchema ? applySchema() : dialect != null ? dialect : detectDialect(dataSource);
            return new JdbcLockBackend(this, chosen);
        }

        /**
         * Creates the sequence (MySQL: the floor table) and the lock table now, each only if missing, without building
         * a backend ({@link #build()} does the same with {@link #createSchema createSchema(true)}); returns the dialect,
         * detected unless set. Instances that run it at once on one database all succeed: their creations are
         * serialized by a lock of the database, and an attempt that still met another's creation runs again.
         * Throws {@link LockBackendException} when the database cannot be reached or refuses the DDL.
         */
        public JdbcDialect applySchema() {
            JdbcDialect chosen = dialect != null ? dialect : detectDialect(dataSource);
            LockSchema.create(dataSource, chosen, tableName, (int) Math.max(1, queryTimeout.toSeconds()));
            return chosen;
        }
    }
}
