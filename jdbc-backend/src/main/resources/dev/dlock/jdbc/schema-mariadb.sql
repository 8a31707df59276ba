-- dlock JDBC lock store, MariaDB 10.6+. Replace ${table} with the configured table name (default dlock_locks).
-- lock_key is binary: keys compare byte for byte (a case-insensitive collation would merge two keys),
-- and 1024 bytes fit InnoDB's index limit. Fencing tokens come from the sequence; never reset it.
CREATE SEQUENCE IF NOT EXISTS ${table}_token_seq;

CREATE TABLE IF NOT EXISTS ${table} (
    lock_key   VARBINARY(1024) NOT NULL PRIMARY KEY,
    owner      VARCHAR(255) CHARACTER SET ascii COLLATE ascii_bin,
    token      BIGINT          NOT NULL,
    expires_at DATETIME(6)     NOT NULL
) ENGINE = InnoDB;
