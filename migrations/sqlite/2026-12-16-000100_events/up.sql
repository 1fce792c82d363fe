-- The events our users' systems hear of (`order.paid`, `employee.created`, …), each written
-- in the same transaction as the change it reports: a change that commits has its events, one
-- that rolls back has none. The owner columns decide whose endpoints may receive an event (a
-- tenant's, its partner's, the platform's); `subject_id` is the record it is about. An
-- event's id is its message id on every delivery. No foreign keys: an event outlives what it
-- reports (a deleted employee's `employee.deleted`).
CREATE TABLE events (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    type TEXT NOT NULL,
    tenant_id BIGINT,
    partner_id BIGINT,
    subject_id BIGINT,
    data TEXT NOT NULL,
    occurred_at TIMESTAMP NOT NULL,
    created_at TIMESTAMP NOT NULL
);
CREATE INDEX events_tenant_idx ON events(tenant_id, id);
CREATE INDEX events_partner_idx ON events(partner_id, id);
