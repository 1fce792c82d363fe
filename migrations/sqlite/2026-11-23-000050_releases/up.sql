-- Code releases of tenants' mini-programs through our third-party platform: authorisations,
-- the component's verify ticket, pushed events already processed, kept code packages, and the
-- upload, audit and release tasks (the platform lists none of them, so they are ours to keep).
-- Every table a tenant owns carries tenant_id; timestamps are UTC.

-- One authorisation per tenant. A mini-program is authorised to one tenant at most, hence the
-- unique app id. The refresh token is stored encrypted (AES-256-GCM under a key derived from
-- the master key, `v1:` + base64); func_info is a JSON array of the granted funcscope ids.
CREATE TABLE mp_authorizations (
    tenant_id BIGINT PRIMARY KEY REFERENCES tenants(id) ON DELETE CASCADE,
    status TEXT NOT NULL CHECK (status IN ('authorized', 'revoked')),
    authorizer_appid TEXT NOT NULL UNIQUE,
    refresh_token_enc TEXT NOT NULL,
    nickname TEXT,
    user_name TEXT,
    func_info TEXT NOT NULL,
    authorized_at TIMESTAMP NOT NULL,
    revoked_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL
);

-- An authorisation page handed out: the SHA-256 of its single-use state (the row is deleted
-- when the state comes back) and the pre-auth code an `authorized` event names.
CREATE TABLE mp_authorization_attempts (
    state_hash TEXT PRIMARY KEY,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id) ON DELETE CASCADE,
    pre_auth_code TEXT NOT NULL,
    created_by BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
CREATE INDEX mp_authorization_attempts_code_idx ON mp_authorization_attempts(pre_auth_code);
CREATE INDEX mp_authorization_attempts_tenant_idx ON mp_authorization_attempts(tenant_id);

-- The newest component_verify_ticket, encrypted like the refresh token: one row (id = 1),
-- replaced only by a ticket pushed later (created_at is the push's CreateTime).
CREATE TABLE mp_verify_ticket (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    ticket_enc TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);

-- Ids of pushed events already processed: a re-delivery changes nothing. Events are the
-- component's, not one tenant's.
CREATE TABLE mp_events (
    event_id TEXT PRIMARY KEY,
    kind TEXT NOT NULL,
    received_at TIMESTAMP NOT NULL
);

-- Code packages kept by content hash (one file per hash at `path`, shared by every task that
-- uploads the same bytes). tenant_id is the first uploader's, for the record; it is cleared
-- rather than blocking that tenant's deletion, as other tenants' tasks may use the package.
CREATE TABLE mp_packages (
    sha256 TEXT PRIMARY KEY,
    size BIGINT NOT NULL CHECK (size > 0),
    project_root TEXT NOT NULL,
    path TEXT NOT NULL,
    tenant_id BIGINT REFERENCES tenants(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX mp_packages_tenant_idx ON mp_packages(tenant_id);

-- An upload of a template (source_template_id + ext_json, a JSON object) or of a kept package
-- (package_sha256 + package_size); template_id is what the code was committed from. A version
-- is used once per tenant.
CREATE TABLE mp_upload_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    source_kind TEXT NOT NULL CHECK (source_kind IN ('template', 'package')),
    source_template_id BIGINT,
    ext_json TEXT,
    package_sha256 TEXT REFERENCES mp_packages(sha256),
    package_size BIGINT,
    version TEXT NOT NULL,
    description TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'uploaded', 'failed')),
    template_id BIGINT,
    errcode BIGINT,
    error TEXT,
    created_by BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    started_at TIMESTAMP,
    finished_at TIMESTAMP,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (tenant_id, version),
    CHECK (
        (source_kind = 'template' AND source_template_id IS NOT NULL AND ext_json IS NOT NULL
            AND package_sha256 IS NULL AND package_size IS NULL)
        OR (source_kind = 'package' AND package_sha256 IS NOT NULL AND package_size IS NOT NULL
            AND source_template_id IS NULL AND ext_json IS NULL)
    )
);
-- A tenant's list by status, newest first, and its latest uploaded task; across tenants
-- (platform lists) by status; by creation time within a tenant and across.
CREATE INDEX mp_upload_tasks_tenant_status_idx ON mp_upload_tasks(tenant_id, status, id);
CREATE INDEX mp_upload_tasks_status_idx ON mp_upload_tasks(status, id);
CREATE INDEX mp_upload_tasks_tenant_created_idx ON mp_upload_tasks(tenant_id, created_at);
CREATE INDEX mp_upload_tasks_created_idx ON mp_upload_tasks(created_at);
CREATE INDEX mp_upload_tasks_package_idx ON mp_upload_tasks(package_sha256);

-- An audit of an uploaded version. screenshots is a JSON array of media ids; gray_percentage
-- and released_at say how much of a passed audit was released.
CREATE TABLE mp_audit_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    upload_task_id BIGINT NOT NULL REFERENCES mp_upload_tasks(id),
    version TEXT NOT NULL,
    auditid BIGINT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('auditing', 'delayed', 'passed', 'rejected', 'withdrawn')),
    reason TEXT,
    screenshots TEXT NOT NULL,
    submitted_at TIMESTAMP NOT NULL,
    decided_at TIMESTAMP,
    gray_percentage INTEGER CHECK (gray_percentage BETWEEN 1 AND 100),
    released_at TIMESTAMP,
    created_by BIGINT NOT NULL,
    updated_at TIMESTAMP NOT NULL
);
-- The platform audits one version of a mini-program at a time: at most one running audit per
-- tenant, so of two concurrent submissions the second insert fails.
CREATE UNIQUE INDEX mp_audit_tasks_running_idx ON mp_audit_tasks(tenant_id) WHERE status IN ('auditing', 'delayed');
CREATE INDEX mp_audit_tasks_tenant_status_idx ON mp_audit_tasks(tenant_id, status, id);
CREATE INDEX mp_audit_tasks_status_idx ON mp_audit_tasks(status, id);
CREATE INDEX mp_audit_tasks_tenant_submitted_idx ON mp_audit_tasks(tenant_id, submitted_at);
CREATE INDEX mp_audit_tasks_submitted_idx ON mp_audit_tasks(submitted_at);
CREATE INDEX mp_audit_tasks_upload_idx ON mp_audit_tasks(upload_task_id);

-- Every release step that reached the platform (full, gray, rollback), succeeded or not.
CREATE TABLE mp_release_tasks (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    tenant_id BIGINT NOT NULL REFERENCES tenants(id),
    audit_task_id BIGINT REFERENCES mp_audit_tasks(id),
    kind TEXT NOT NULL CHECK (kind IN ('full', 'gray', 'rollback')),
    version TEXT,
    gray_percentage INTEGER CHECK (gray_percentage BETWEEN 1 AND 100),
    status TEXT NOT NULL CHECK (status IN ('succeeded', 'failed')),
    errcode BIGINT,
    errmsg TEXT,
    created_by BIGINT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX mp_release_tasks_tenant_idx ON mp_release_tasks(tenant_id, id);
CREATE INDEX mp_release_tasks_audit_idx ON mp_release_tasks(audit_task_id);
