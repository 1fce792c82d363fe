DROP TABLE documents;
DROP TABLE doc_token_projects;
DROP TABLE doc_tokens;
DROP TABLE doc_projects;
