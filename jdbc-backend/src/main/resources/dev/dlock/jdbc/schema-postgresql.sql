-- dlock JDBC lock store, PostgreSQL 14+. Replace ${table} with the configured table name (default dlock_locks).
-- Fencing tokens come from the sequence: CACHE 1 keeps them increasing across sessions; never reset it.
CREATE SEQUENCE IF NOT EXISTS ${table}_token_seq CACHE 1;

CREATE TABLE IF NOT EXISTS ${table} (
    lock_key   VARCHAR(1024) NOT NULL PRIMARY KEY,
    owner      VARCHAR(255),
    token      BIGINT        NOT NULL,
    expires_at TIMESTAMPTZ   NOT NULL
);
