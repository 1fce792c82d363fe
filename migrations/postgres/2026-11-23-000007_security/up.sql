-- Failed password logins are counted per presented login identifier (username, phone or
-- e-mail), whether or not an account has it, so a lockout tells nothing about which
-- accounts exist. This replaces the per-user counters.
CREATE TABLE login_failures (
    login_key TEXT PRIMARY KEY NOT NULL,
    failures INTEGER NOT NULL DEFAULT 0,
    locked_until TIMESTAMP,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX login_failures_updated_idx ON login_failures(updated_at);
ALTER TABLE users DROP COLUMN failed_logins;
ALTER TABLE users DROP COLUMN locked_until;
