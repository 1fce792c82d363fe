use crate::model::*;
use async_trait::async_trait;
use atrium_kernel::{Id, Page, PageRequest, Party, Result, Timestamp};

/// Storage of projects, documents and API tokens. Each method is atomic.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait DocsRepo: Send + Sync + 'static {
    /// Stores a new project and returns it with its id.
    async fn create_project(&self, project: NewProject) -> Result<Project>;

    /// The project with this id, whoever owns it.
    async fn get_project(&self, id: Id) -> Result<Option<Project>>;

    /// Projects a caller of `scope` sees, oldest first: every project for the platform, a
    /// partner's own and its tenants', a tenant's own.
    async fn list_projects(&self, scope: Party, page: PageRequest) -> Result<Page<Project>>;

    /// The partner of a tenant (`None` if it has none or does not exist).
    async fn tenant_partner(&self, tenant_id: Id) -> Result<Option<Id>>;

    /// Stores a token with its project list. MUST return `Conflict` if the hash exists.
    async fn create_token(&self, token: NewToken) -> Result<ApiToken>;

    /// The token whose value hashes to `token_hash`, revoked and expired ones included.
    /// MUST set `suspended` when the owning party (or the owning tenant's partner) is
    /// disabled, or the issuing user is disabled, gone, or in a disabled party.
    async fn find_token_by_hash(&self, token_hash: &str) -> Result<Option<ApiToken>>;

    /// The token with this id, whoever owns it; `suspended` need not be filled.
    async fn get_token(&self, id: Id) -> Result<Option<ApiToken>>;

    /// Tokens a caller of `scope` sees (as for projects), oldest first.
    async fn list_tokens(&self, scope: Party, page: PageRequest) -> Result<Page<ApiToken>>;

    /// Marks the token revoked at `at`, unless it already is (the first time stays).
    async fn revoke_token(&self, id: Id, at: Timestamp, effects: atrium_kernel::Effects) -> Result<()>;

    /// Sets `last_used_at = at` only if it is unset or older than `stale_before`, so
    /// instances sharing a database write it at most once per interval. Returns whether
    /// it wrote.
    async fn touch_token(&self, id: Id, at: Timestamp, stale_before: Timestamp) -> Result<bool>;

    /// The document with this id, with its content, whatever its project.
    async fn get_document(&self, id: Id) -> Result<Option<Document>>;

    /// The depth of document `id` if it belongs to project `project_id`; `None` otherwise.
    /// (What a parent check needs, without loading the parent's content.)
    async fn document_depth(&self, project_id: Id, id: Id) -> Result<Option<i32>>;

    /// Stores a document. The caller has checked that the parent is in the same project;
    /// the store MUST still refuse (`Conflict`) a parent outside `project_id`.
    async fn insert_document(&self, doc: NewDocument) -> Result<Document>;

    /// Every document of a project, without content.
    async fn list_documents(&self, project_id: Id) -> Result<Vec<DocumentSummary>>;
}
