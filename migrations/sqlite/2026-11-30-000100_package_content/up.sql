-- The content of code packages kept in the database (ATRIUM_PACKAGE_STORE=database), so
-- instances share packages without sharing a disk. One row per content hash, beside the
-- package's record in mp_packages; a record without a row here is a package kept in the
-- package directory instead. Deleting the record deletes its content with it, and an upload
-- task referring to the record still refuses that delete.
CREATE TABLE mp_package_contents (
    sha256 TEXT PRIMARY KEY REFERENCES mp_packages(sha256) ON DELETE CASCADE,
    content BLOB NOT NULL
);
