use crate::api::{CreateDocumentRequest, CreateTokenRequest};
use crate::config::DocsConfig;
use crate::model::*;
use crate::ports::DocsRepo;
use crate::token;
use crate::tree::build_tree;
use atrium_kernel::Reason;
use atrium_kernel::{Actor, AuditRecord, Clock, Error, Id, Page, PageRequest, Party, PartyType, Result, Timestamp};

/// The audit entry of `action` on a `target_type` record owned by `owner`, by `by` (the
/// system, from the CLI, when `None`).
fn audit_of(
    by: Option<&Actor>,
    at: Timestamp,
    action: &str,
    target_type: &'static str,
    target_id: Option<Id>,
    owner: Owner,
) -> AuditRecord {
    let record = match by {
        Some(actor) => AuditRecord::by(actor, at, action, target_type, target_id),
        None => AuditRecord::system(at, action, target_type, target_id),
    };
    match (owner.party_type(), owner.party_id()) {
        (PartyType::Partner, id) => record.owned_by(id, None),
        (PartyType::Tenant, id) => record.owned_by(None, id),
        _ => record,
    }
}
use std::sync::Arc;

/// The document use cases: managing projects and tokens for an owner, and creating and
/// reading documents with an API token.
pub struct DocsService {
    repo: Arc<dyn DocsRepo>,
    clock: Arc<dyn Clock>,
    config: DocsConfig,
}

impl DocsService {
    /// A service over its storage, its clock and its limits.
    pub fn new(repo: Arc<dyn DocsRepo>, clock: Arc<dyn Clock>, config: DocsConfig) -> Self {
        DocsService { repo, clock, config }
    }

    /// The limits the service checks (name length, content size, depth, …).
    pub fn config(&self) -> &DocsConfig {
        &self.config
    }

    // ----- projects -----------------------------------------------------------------------

    /// Creates a project for `owner`, by `by` (the CLI passes `None`); `Invalid` when the name
    /// is empty, too long or holds control or invisible characters. Audited
    /// (`doc_project.create`).
    pub async fn create_project(&self, by: Option<&Actor>, owner: Owner, name: &str) -> Result<Project> {
        let name = self.name("name", name)?;
        let at = self.clock.now();
        let audit = audit_of(by, at, "doc_project.create", "doc_project", None, owner).with_after(serde_json::json!({"name": name}));
        self.repo.create_project(NewProject { name, owner, at, audit }).await
    }

    /// Projects the caller sees: all for the platform, a partner's own and its tenants', a
    /// tenant's own.
    pub async fn list_projects(&self, scope: Party, page: PageRequest) -> Result<Page<Project>> {
        self.repo.list_projects(scope, page).await
    }

    /// A project the caller sees; any other is `NotFound`, exactly like a missing one.
    pub async fn get_project(&self, scope: Party, id: Id) -> Result<Project> {
        match self.repo.get_project(id).await? {
            Some(p) if self.sees(scope, p.owner).await? => Ok(p),
            _ => Err(Error::NotFound("project")),
        }
    }

    /// `owner`'s own project (what its tokens may reach); any other is `NotFound`.
    async fn owned_project(&self, owner: Owner, id: Id) -> Result<Project> {
        self.repo.get_project(id).await?.filter(|p| p.owner == owner).ok_or(Error::NotFound("project"))
    }

    /// Whether a caller of `scope` sees what `owner` owns (the API-wide scope rule: the platform sees all, a
    /// partner its own and its tenants', a tenant its own).
    async fn sees(&self, scope: Party, owner: Owner) -> Result<bool> {
        Ok(match (scope, owner.party_type(), owner.party_id()) {
            (Party::Platform, _, _) => true,
            (Party::Partner { partner_id }, PartyType::Partner, Some(id)) => id == partner_id,
            (Party::Partner { partner_id }, PartyType::Tenant, Some(t)) => self.repo.tenant_partner(t).await? == Some(partner_id),
            (Party::Tenant { tenant_id, .. }, PartyType::Tenant, Some(t)) => t == tenant_id,
            _ => false,
        })
    }

    // ----- tokens -------------------------------------------------------------------------

    /// Issues a token for `owner`, by `by` (the CLI passes `None`), optionally limited to some
    /// of its projects. The value is returned here once and stored only as a hash. Audited
    /// (`doc_token.create`, without the value).
    pub async fn create_token(&self, by: Option<&Actor>, owner: Owner, req: CreateTokenRequest) -> Result<IssuedToken> {
        let created_by = by.map(|a| a.user_id);
        let now = self.clock.now();
        let name = self.name("name", &req.name)?;
        if req.expires_at.is_some_and(|e| e <= now) {
            return Err(Error::invalid("expires_at", "must be in the future"));
        }
        let projects = match req.project_ids {
            None => ProjectGrant::All,
            Some(mut ids) => {
                ids.sort_unstable();
                ids.dedup();
                if ids.is_empty() {
                    return Err(Error::invalid("project_ids", "must list at least one project, or be left out for all projects"));
                }
                if ids.len() > self.config.max_token_projects {
                    return Err(Error::invalid("project_ids", format!("may list at most {} projects", self.config.max_token_projects)));
                }
                for id in &ids {
                    self.owned_project(owner, *id).await?;
                }
                ProjectGrant::Only(ids)
            }
        };
        let secret = token::generate();
        let shown = serde_json::json!({"name": name, "project_ids": projects.ids(), "expires_at": req.expires_at});
        let audit = audit_of(by, now, "doc_token.create", "doc_token", None, owner).with_after(shown);
        let token = self
            .repo
            .create_token(NewToken {
                name,
                token_hash: token::hash_token(&secret),
                owner,
                projects,
                created_by,
                created_at: now,
                expires_at: req.expires_at,
                audit,
            })
            .await?;
        log::info!("API token {} issued for {owner}", token.id);
        Ok(IssuedToken { token, secret })
    }

    /// Tokens the caller sees (as for projects), oldest first, revoked and expired ones included.
    pub async fn list_tokens(&self, scope: Party, page: PageRequest) -> Result<Page<ApiToken>> {
        self.repo.list_tokens(scope, page).await
    }

    /// Revokes a token the caller sees (`by` the user, `None` from the CLI); it answers 401
    /// from the next request on. Revoking a revoked token changes nothing. Audited
    /// (`doc_token.revoke`).
    pub async fn revoke_token(&self, by: Option<&Actor>, scope: Party, id: Id) -> Result<ApiToken> {
        let token = match self.repo.get_token(id).await? {
            Some(t) if self.sees(scope, t.owner).await? => t,
            _ => return Err(Error::NotFound("API token")),
        };
        if token.revoked_at.is_some() {
            return Ok(token);
        }
        let now = self.clock.now();
        let audit =
            audit_of(by, now, "doc_token.revoke", "doc_token", Some(id), token.owner).with_after(serde_json::json!({"revoked": true}));
        self.repo.revoke_token(id, now, atrium_kernel::Effects::audited(audit)).await?;
        log::info!("API token {id} revoked");
        self.repo.get_token(id).await?.ok_or(Error::NotFound("API token"))
    }

    /// Now, by the service's clock (for callers showing a token's status).
    pub fn now(&self) -> Timestamp {
        self.clock.now()
    }

    // ----- the document interface ---------------------------------------------------------

    /// Resolves a presented token value to a live token, or 401. Records the use at most
    /// once per `touch_interval`.
    pub async fn authenticate(&self, raw: &str) -> Result<ApiToken> {
        let invalid = || Error::Unauthenticated("invalid API token".into());
        if !token::well_formed(raw) {
            return Err(invalid());
        }
        let token = self.repo.find_token_by_hash(&token::hash_token(raw)).await?.ok_or_else(invalid)?;
        let now = self.clock.now();
        match token.status(now) {
            TokenStatus::Active => {}
            TokenStatus::Revoked => return Err(Error::Unauthenticated("this API token has been revoked".into())),
            TokenStatus::Expired => return Err(Error::Unauthenticated("this API token has expired".into())),
            TokenStatus::Suspended => {
                let why = token.suspended.as_deref().unwrap_or("its owner is disabled");
                return Err(Error::Forbidden(Reason::TokenNotAllowed, format!("this API token cannot be used: {why}")));
            }
        }
        let stale_before = now - self.config.touch_interval;
        if token.last_used_at.is_none_or(|t| t <= stale_before) {
            // Bookkeeping only: a failure here must not refuse a valid token.
            if let Err(e) = self.repo.touch_token(token.id, now, stale_before).await {
                log::warn!("cannot record use of API token {}: {e}", token.id);
            }
        }
        Ok(token)
    }

    /// Creates a document in a project the token reaches.
    pub async fn create_document(&self, token: &ApiToken, input: CreateDocumentRequest) -> Result<Document> {
        let name = self.name("name", &input.name)?;
        let content = input.content.unwrap_or_default();
        if content.len() > self.config.max_content_bytes {
            return Err(Error::TooLarge(format!("content is larger than {} bytes", self.config.max_content_bytes)));
        }
        let project = self.reach(token, input.project).await?;
        let depth = match input.parent {
            None => 0,
            Some(parent_id) => {
                let parent_depth =
                    self.repo.document_depth(project.id, parent_id).await?.ok_or_else(|| {
                        Error::no_such("parent", format!("document {parent_id} does not exist in project {}", project.id))
                    })?;
                if parent_depth + 1 > self.config.max_depth {
                    return Err(Error::invalid("parent", format!("documents nest at most {} levels deep", self.config.max_depth)));
                }
                parent_depth + 1
            }
        };
        self.repo
            .insert_document(NewDocument {
                project_id: project.id,
                parent_id: input.parent,
                name,
                content,
                sort: input.sort.unwrap_or(0),
                depth,
                author_token_id: Some(token.id),
                at: self.clock.now(),
            })
            .await
    }

    /// One document, with content, from a project the token reaches.
    pub async fn get_document(&self, token: &ApiToken, id: Id) -> Result<Document> {
        let doc = self.repo.get_document(id).await?.ok_or(Error::NotFound("document"))?;
        match self.reach(token, doc.project_id).await {
            Err(Error::NotFound(_)) => Err(Error::NotFound("document")),
            Err(e) => Err(e),
            Ok(_) => Ok(doc),
        }
    }

    /// A project's documents as a tree (without content).
    pub async fn document_tree(&self, token: &ApiToken, project_id: Id) -> Result<DocumentTree> {
        let project = self.reach(token, project_id).await?;
        let docs = self.repo.list_documents(project.id).await?;
        let total = docs.len();
        Ok(DocumentTree { project, total, roots: build_tree(docs) })
    }

    /// The project if the token may use it: another owner's project is `NotFound` (as a
    /// missing one); one of the token's owner outside its list is `Forbidden`.
    async fn reach(&self, token: &ApiToken, project_id: Id) -> Result<Project> {
        let project = self.owned_project(token.owner, project_id).await?;
        if !token.projects.includes(project.id) {
            return Err(Error::forbidden(Reason::TokenNotAllowed, format!("this API token is not granted project {}", project.id)));
        }
        Ok(project)
    }

    /// A trimmed, non-empty name of at most `max_name_chars` characters without control
    /// characters.
    fn name(&self, field: &str, raw: &str) -> Result<String> {
        let s = raw.trim();
        if s.is_empty() {
            return Err(Error::invalid(field, "must not be empty"));
        }
        let max = self.config.max_name_chars;
        // Counted as sent, white space included: the bound a client can check before sending.
        if raw.chars().count() > max {
            return Err(Error::invalid(field, format!("must be at most {max} characters")));
        }
        if s.chars().any(char::is_control) {
            return Err(Error::invalid(field, "must not contain control characters"));
        }
        if s.chars().any(atrium_kernel::is_deceptive) {
            return Err(Error::invalid(field, "must not contain invisible or text-direction characters"));
        }
        Ok(s.to_owned())
    }
}

#[cfg(test)]
mod tests;
