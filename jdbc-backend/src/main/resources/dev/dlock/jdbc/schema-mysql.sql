-- dlock JDBC lock store, MySQL 8.0+ (no sequences). Replace ${table} with the configured table name (default dlock_locks).
-- Fencing tokens count up in each key's row. A new row starts above the one row of ${table}_token_floor, which
-- cleanup raises to every token it deletes, in the same transaction: delete lock rows only through cleanup (or raise
-- the floor to their tokens in the transaction that deletes them), and never lower the floor.
-- lock_key is binary: keys compare byte for byte (a case-insensitive collation would merge two keys),
-- and 1024 bytes fit InnoDB's index limit.
CREATE TABLE IF NOT EXISTS ${table}_token_floor (
    id    TINYINT NOT NULL PRIMARY KEY,
    token BIGINT  NOT NULL
) ENGINE = InnoDB;

INSERT IGNORE INTO ${table}_token_floor (id, token) VALUES (1, 0);

CREATE TABLE IF NOT EXISTS ${table} (
    lock_key   VARBINARY(1024) NOT NULL PRIMARY KEY,
    owner      VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin,
    token      BIGINT          NOT NULL,
    expires_at DATETIME(6)     NOT NULL
) ENGINE = InnoDB;
