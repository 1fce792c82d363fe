DROP TABLE mp_release_tasks;
DROP TABLE mp_audit_tasks;
DROP TABLE mp_upload_tasks;
DROP TABLE mp_packages;
DROP TABLE mp_events;
DROP TABLE mp_verify_ticket;
DROP TABLE mp_authorization_attempts;
DROP TABLE mp_authorizations;
