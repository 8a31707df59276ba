-- dlock JDBC lock store, H2 2.x. Replace ${table} with the configured table name (default dlock_locks).
-- Fencing tokens come from the sequence; never reset it.
CREATE SEQUENCE IF NOT EXISTS ${table}_token_seq;

CREATE TABLE IF NOT EXISTS ${table} (
    lock_key   VARCHAR(1024) NOT NULL PRIMARY KEY,
    owner      VARCHAR(255),
    token      BIGINT        NOT NULL,
    expires_at TIMESTAMP(6) WITH TIME ZONE NOT NULL
);
