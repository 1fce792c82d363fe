-- The periodic purge of release records removes authorisation attempts past their expiry and
-- ids of processed pushed events past their retention, a bounded batch at a time; these
-- indexes let it find them without reading either table whole.
CREATE INDEX mp_authorization_attempts_expires_idx ON mp_authorization_attempts(expires_at);
CREATE INDEX mp_events_received_idx ON mp_events(received_at);
