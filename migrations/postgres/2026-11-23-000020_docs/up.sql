-- Document projects, documents and the API tokens of the document interface.
-- A project or token belongs to one party: party_id is NULL exactly for the platform.
CREATE TABLE doc_projects (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    party_type TEXT NOT NULL CHECK (party_type IN ('platform', 'partner', 'tenant')),
    party_id BIGINT,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    CHECK ((party_type = 'platform') = (party_id IS NULL))
);
CREATE INDEX doc_projects_party_idx ON doc_projects(party_type, party_id, id);

-- Only the SHA-256 of a token's value is stored.
CREATE TABLE doc_tokens (
    id BIGSERIAL PRIMARY KEY,
    name TEXT NOT NULL,
    token_hash TEXT NOT NULL,
    party_type TEXT NOT NULL CHECK (party_type IN ('platform', 'partner', 'tenant')),
    party_id BIGINT,
    all_projects BOOLEAN NOT NULL,
    created_by BIGINT REFERENCES users(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP,
    revoked_at TIMESTAMP,
    last_used_at TIMESTAMP,
    CHECK ((party_type = 'platform') = (party_id IS NULL))
);
CREATE UNIQUE INDEX doc_tokens_hash_idx ON doc_tokens(token_hash);
CREATE INDEX doc_tokens_party_idx ON doc_tokens(party_type, party_id, id);

-- The projects a token is limited to (when all_projects is false).
CREATE TABLE doc_token_projects (
    token_id BIGINT NOT NULL REFERENCES doc_tokens(id) ON DELETE CASCADE,
    project_id BIGINT NOT NULL REFERENCES doc_projects(id) ON DELETE CASCADE,
    PRIMARY KEY (token_id, project_id)
);
CREATE INDEX doc_token_projects_project_idx ON doc_token_projects(project_id);

-- A parent must be a document of the same project: the composite key enforces it.
CREATE TABLE documents (
    id BIGSERIAL PRIMARY KEY,
    project_id BIGINT NOT NULL REFERENCES doc_projects(id) ON DELETE CASCADE,
    parent_id BIGINT,
    name TEXT NOT NULL,
    content TEXT NOT NULL,
    sort BIGINT NOT NULL DEFAULT 0,
    depth INTEGER NOT NULL DEFAULT 0,
    author_token_id BIGINT REFERENCES doc_tokens(id) ON DELETE SET NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    UNIQUE (project_id, id),
    FOREIGN KEY (project_id, parent_id) REFERENCES documents(project_id, id)
);
CREATE INDEX documents_tree_idx ON documents(project_id, parent_id, sort, id);
