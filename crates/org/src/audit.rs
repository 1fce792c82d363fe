//! Reading the audit trail. Entries are written by the repositories, in the transaction of
//! the change they record; there is no way to edit or delete them.
use async_trait::async_trait;
use atrium_kernel::{Actor, Id, Page, PageRequest, Party, Result, Timestamp};
use serde::Serialize;
use std::sync::Arc;

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AuditEntry {
    pub id: Id,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub at: Timestamp,
    pub actor_user_id: Option<Id>,
    pub ip: Option<String>,
    pub request_id: Option<String>,
    pub action: String,
    pub target_type: String,
    pub target_id: Option<Id>,
    pub partner_id: Option<Id>,
    pub tenant_id: Option<Id>,
    /// Changed fields before the change (secrets redacted).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub before: Option<serde_json::Value>,
    /// Changed fields after the change (secrets redacted).
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub after: Option<serde_json::Value>,
}

#[derive(Debug, Clone, Default)]
pub struct AuditQuery {
    pub page: PageRequest,
    pub actor_user_id: Option<Id>,
    pub target_type: Option<String>,
    pub target_id: Option<Id>,
    pub action: Option<String>,
    pub from: Option<Timestamp>,
    pub to: Option<Timestamp>,
}

/// Reading stored audit entries, newest first. Partner callers see entries about their
/// partner and its tenants; tenant callers entries about their tenant.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AuditRepo: Send + Sync + 'static {
    async fn list_audit(&self, scope: Party, query: AuditQuery) -> Result<Page<AuditEntry>>;
}

pub struct AuditService {
    repo: Arc<dyn AuditRepo>,
}

impl AuditService {
    pub fn new(repo: Arc<dyn AuditRepo>) -> Self {
        AuditService { repo }
    }

    pub async fn list(&self, actor: &Actor, query: AuditQuery) -> Result<Page<AuditEntry>> {
        self.repo.list_audit(actor.party, query).await
    }
}
