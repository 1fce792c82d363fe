//! Org's ports: storage of partners, tenants, employees and the audit trail (every write
//! takes the [`Effects`] — audit record, events — to store in the same transaction, written
//! only with the change), and [`AccessChanged`], which
//! tells identity that a party change changed its users' access.
use async_trait::async_trait;
use atrium_kernel::{Effects, Id, Page, Party, Result};

use crate::model::{AuditEntry, AuditQuery, Employee, EmployeeQuery, Partner, PartnerQuery, Tenant, TenantQuery};

/// Storage of partners. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PartnerRepo: Send + Sync + 'static {
    /// One page of the partners in `scope` that match `query`.
    async fn list_partners(&self, scope: Party, query: PartnerQuery) -> Result<Page<Partner>>;
    /// The partner, if it exists and is in `scope`.
    async fn get_partner(&self, scope: Party, id: Id) -> Result<Option<Partner>>;
    /// Inserts `partner` (its `id` is ignored) and `effects` ([`Effects::created`]) atomically.
    async fn insert_partner(&self, partner: Partner, effects: Effects) -> Result<Partner>;
    /// Saves every field of `partner` and `effects` atomically.
    async fn update_partner(&self, partner: Partner, effects: Effects) -> Result<Partner>;
    /// Deletes the partner. Unless `cascade`, MUST return `Conflict` while tenants or users
    /// belong to it; with `cascade` removes them (and what belongs to those tenants) too.
    /// Returns the ids of users deleted.
    async fn delete_partner(&self, id: Id, cascade: bool, effects: Effects) -> Result<Vec<Id>>;
}

/// Storage of tenants. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TenantRepo: Send + Sync + 'static {
    /// One page of the tenants in `scope` that match `query`.
    async fn list_tenants(&self, scope: Party, query: TenantQuery) -> Result<Page<Tenant>>;
    /// The tenant, if it exists and is in `scope`.
    async fn get_tenant(&self, scope: Party, id: Id) -> Result<Option<Tenant>>;
    /// Whether a partner with this id exists (for references from a tenant).
    async fn partner_exists(&self, id: Id) -> Result<bool>;
    /// MUST return `Conflict` for a credit code already used by another tenant.
    async fn insert_tenant(&self, tenant: Tenant, effects: Effects) -> Result<Tenant>;
    /// Saves every field of `tenant` and `effects` atomically. MUST return `Conflict` for a
    /// credit code already used by another tenant.
    async fn update_tenant(&self, tenant: Tenant, effects: Effects) -> Result<Tenant>;
    /// Unless `cascade`, MUST return `Conflict` while employees or users belong to the
    /// tenant; with `cascade` removes them too. Returns the ids of users deleted.
    async fn delete_tenant(&self, id: Id, cascade: bool, effects: Effects) -> Result<Vec<Id>>;
}

/// Storage of employees. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait EmployeeRepo: Send + Sync + 'static {
    /// One page of the employees in `scope` that match `query`.
    async fn list_employees(&self, scope: Party, query: EmployeeQuery) -> Result<Page<Employee>>;
    /// The employee, if it exists and is in `scope`, its numbers decrypted.
    async fn get_employee(&self, scope: Party, id: Id) -> Result<Option<Employee>>;
    /// The partner of a tenant in scope, `Err(NotFound)` if the tenant is not in scope.
    async fn tenant_partner(&self, scope: Party, tenant_id: Id) -> Result<Option<Id>>;
    /// MUST return `Conflict` for a duplicate employee number or id card number in the tenant.
    async fn insert_employee(&self, employee: Employee, effects: Effects) -> Result<Employee>;
    /// Saves every field of `employee` and `effects` atomically. MUST return `Conflict` for a
    /// duplicate employee number or id card number in the tenant.
    async fn update_employee(&self, employee: Employee, effects: Effects) -> Result<Employee>;
    /// MUST return `Conflict` while payroll records refer to the employee.
    async fn delete_employee(&self, id: Id, effects: Effects) -> Result<()>;
}

/// Reading stored audit entries, newest first. Partner callers see entries about their
/// partner and its tenants; tenant callers entries about their tenant.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait AuditRepo: Send + Sync + 'static {
    /// One page of the entries `scope` may read that match `query`, newest first.
    async fn list_audit(&self, scope: Party, query: AuditQuery) -> Result<Page<AuditEntry>>;
}

/// Told when a change to a party changed its users' access, so in-process caches of
/// authenticated sessions (identity owns them) drop what they hold at once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait AccessChanged: Send + Sync + 'static {
    /// A user went with its deleted party.
    fn user_access_changed(&self, user_id: Id);
    /// A partner's or tenant's status (or a tenant's partner) changed: every user and API
    /// token of that party, and of a partner's tenants, is affected.
    fn party_changed(&self);
}
