-- Parties, users, roles and every piece of security state.
CREATE TABLE partners (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    name TEXT NOT NULL,
    contact_name TEXT,
    phone TEXT,
    email TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);

CREATE TABLE tenants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    partner_id BIGINT REFERENCES partners(id),
    name TEXT NOT NULL,
    credit_code TEXT UNIQUE,
    contact_name TEXT,
    phone TEXT,
    status TEXT NOT NULL DEFAULT 'active',
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX tenants_partner_idx ON tenants(partner_id);

CREATE TABLE users (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    username TEXT NOT NULL UNIQUE,
    password_hash TEXT,
    name TEXT NOT NULL,
    phone TEXT UNIQUE,
    email TEXT UNIQUE,
    party_type TEXT NOT NULL CHECK (party_type IN ('platform', 'partner', 'tenant')),
    partner_id BIGINT REFERENCES partners(id),
    tenant_id BIGINT REFERENCES tenants(id),
    status TEXT NOT NULL DEFAULT 'active',
    chat_identity TEXT UNIQUE,
    failed_logins INTEGER NOT NULL DEFAULT 0,
    locked_until TIMESTAMP,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE INDEX users_partner_idx ON users(partner_id);
CREATE INDEX users_tenant_idx ON users(tenant_id);

CREATE TABLE roles (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    code TEXT NOT NULL,
    name TEXT NOT NULL,
    party_type TEXT NOT NULL CHECK (party_type IN ('platform', 'partner', 'tenant')),
    owner_partner_id BIGINT REFERENCES partners(id),
    owner_tenant_id BIGINT REFERENCES tenants(id),
    builtin BOOLEAN NOT NULL DEFAULT FALSE,
    permissions TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
CREATE UNIQUE INDEX roles_code_owner_idx ON roles(code, COALESCE(owner_partner_id, 0), COALESCE(owner_tenant_id, 0));

CREATE TABLE user_roles (
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    role_id BIGINT NOT NULL REFERENCES roles(id) ON DELETE CASCADE,
    PRIMARY KEY (user_id, role_id)
);
CREATE INDEX user_roles_role_idx ON user_roles(role_id);

CREATE TABLE sessions (
    id TEXT PRIMARY KEY NOT NULL,
    user_id BIGINT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    revoked_at TIMESTAMP,
    revoke_reason TEXT,
    ip TEXT,
    user_agent TEXT
);
CREATE INDEX sessions_user_idx ON sessions(user_id);

CREATE TABLE refresh_tokens (
    token_hash TEXT PRIMARY KEY NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    used_at TIMESTAMP
);
CREATE INDEX refresh_tokens_session_idx ON refresh_tokens(session_id);

CREATE TABLE verification_codes (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    target TEXT NOT NULL,
    purpose TEXT NOT NULL,
    code_hash TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    consumed_at TIMESTAMP,
    ip TEXT
);
CREATE INDEX verification_codes_target_idx ON verification_codes(target, purpose, id);

CREATE TABLE rate_events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    bucket TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX rate_events_bucket_idx ON rate_events(bucket, created_at);
CREATE INDEX rate_events_created_idx ON rate_events(created_at);

CREATE TABLE chat_tickets (
    ticket TEXT PRIMARY KEY NOT NULL,
    status TEXT NOT NULL,
    chat_identity TEXT,
    user_id BIGINT REFERENCES users(id) ON DELETE CASCADE,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL,
    consumed_at TIMESTAMP
);
