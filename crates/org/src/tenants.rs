//! Tenants (enterprises): the customers whose employees, payroll and orders Atrium runs.
use async_trait::async_trait;
use atrium_kernel::payroll::PayrollPolicy;
use atrium_kernel::{Actor, AuditRecord, Clock, Email, Error, Id, Label, Name, Page, Party, Phone, Result, Timestamp, patch};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::ids::CreditCode;
use crate::scope::{ListQuery, partner_in_scope};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum TenantStatus {
    /// Registered by itself; waits for a platform or partner admin to activate it.
    Pending,
    Active,
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tenant {
    pub id: Id,
    pub partner_id: Option<Id>,
    pub name: String,
    /// Unified social credit code (GB 32100).
    pub credit_code: Option<String>,
    pub contact_name: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub status: TenantStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = Object))]
    pub payroll_policy: PayrollPolicy,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// `POST /tenants` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewTenant {
    pub name: Name,
    /// Platform callers may name any partner (or none); partner callers get their own.
    pub partner_id: Option<Id>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub credit_code: Option<CreditCode>,
    pub contact_name: Option<Label>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    pub status: Option<TenantStatus>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payroll_policy: Option<PayrollPolicy>,
}

/// `PUT /tenants/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct TenantPatch {
    pub name: Option<Name>,
    /// Platform callers only: move the tenant to another partner (or none, with null).
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>))]
    pub partner_id: Option<Option<Id>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub credit_code: Option<Option<CreditCode>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub contact_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub email: Option<Option<Email>>,
    pub status: Option<TenantStatus>,
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Object>))]
    pub payroll_policy: Option<PayrollPolicy>,
}

#[derive(Debug, Clone, Default)]
pub struct TenantQuery {
    pub list: ListQuery<TenantSort>,
    pub status: Option<TenantStatus>,
    pub partner_id: Option<Id>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum TenantSort {
    Id,
    CreatedAt,
    Name,
}

/// Storage of tenants. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait TenantRepo: Send + Sync + 'static {
    async fn list_tenants(&self, scope: Party, query: TenantQuery) -> Result<Page<Tenant>>;
    async fn get_tenant(&self, scope: Party, id: Id) -> Result<Option<Tenant>>;
    /// Whether a partner with this id exists (for references from a tenant).
    async fn partner_exists(&self, id: Id) -> Result<bool>;
    /// MUST return `Conflict` for a credit code already used by another tenant.
    async fn insert_tenant(&self, tenant: Tenant, audit: AuditRecord) -> Result<Tenant>;
    async fn update_tenant(&self, tenant: Tenant, audit: AuditRecord) -> Result<Tenant>;
    /// Unless `cascade`, MUST return `Conflict` while employees or users belong to the
    /// tenant; with `cascade` removes them too. Returns the ids of users deleted.
    async fn delete_tenant(&self, id: Id, cascade: bool, audit: AuditRecord) -> Result<Vec<Id>>;
}

pub struct TenantService {
    repo: Arc<dyn TenantRepo>,
    access: Arc<dyn crate::AccessChanged>,
    clock: Arc<dyn Clock>,
}

fn audit_json(t: &Tenant) -> serde_json::Value {
    serde_json::to_value(t).unwrap_or_default()
}

impl TenantService {
    pub fn new(repo: Arc<dyn TenantRepo>, access: Arc<dyn crate::AccessChanged>, clock: Arc<dyn Clock>) -> Self {
        TenantService { repo, access, clock }
    }

    pub async fn list(&self, actor: &Actor, query: TenantQuery) -> Result<Page<Tenant>> {
        self.repo.list_tenants(actor.party, query).await
    }

    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Tenant> {
        self.repo.get_tenant(actor.party, id).await?.ok_or(Error::NotFound("tenant"))
    }

    async fn check_partner(&self, actor: &Actor, requested: Option<Id>) -> Result<Option<Id>> {
        let partner = partner_in_scope(actor.party, requested)?;
        if let Some(p) = partner
            && !self.repo.partner_exists(p).await?
        {
            return Err(Error::invalid("partner_id", "no such partner"));
        }
        Ok(partner)
    }

    pub async fn create(&self, actor: &Actor, input: NewTenant) -> Result<Tenant> {
        let partner_id = self.check_partner(actor, input.partner_id).await?;
        let policy = input.payroll_policy.unwrap_or_default();
        policy.validate()?;
        let now = self.clock.now();
        let tenant = Tenant {
            id: 0,
            partner_id,
            name: input.name.into_string(),
            credit_code: input.credit_code.map(String::from),
            contact_name: input.contact_name.map(Label::into_string),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            status: input.status.unwrap_or(TenantStatus::Active),
            payroll_policy: policy,
            created_at: now,
            updated_at: now,
        };
        let audit = AuditRecord::by(actor, now, "tenant.create", "tenant", None)
            .owned_by(partner_id, None)
            .change(None, Some(&audit_json(&tenant)));
        self.repo.insert_tenant(tenant, audit).await
    }

    pub async fn update(&self, actor: &Actor, id: Id, patch: TenantPatch) -> Result<Tenant> {
        let before = self.get(actor, id).await?;
        let is_tenant_user = matches!(actor.party, Party::Tenant { .. });
        let mut after = before.clone();
        if let Some(p) = patch.partner_id
            && p != before.partner_id
        {
            if actor.party != Party::Platform {
                return Err(Error::forbidden("only platform users can move a tenant to another partner"));
            }
            after.partner_id = self.check_partner(actor, p).await?;
        }
        if let Some(s) = patch.status
            && s != before.status
        {
            if is_tenant_user {
                return Err(Error::forbidden("a tenant cannot change its own status"));
            }
            after.status = s;
        }
        if let Some(v) = patch.name {
            after.name = v.into_string();
        }
        if let Some(v) = patch.credit_code {
            after.credit_code = v.map(String::from);
        }
        if let Some(v) = patch.contact_name {
            after.contact_name = v.map(Label::into_string);
        }
        if let Some(v) = patch.phone {
            after.phone = v.map(String::from);
        }
        if let Some(v) = patch.email {
            after.email = v.map(String::from);
        }
        if let Some(policy) = patch.payroll_policy {
            // Four-eyes binds the tenant's own users, so they may turn it on but not off.
            if is_tenant_user && before.payroll_policy.four_eyes && !policy.four_eyes {
                return Err(Error::forbidden("only the tenant's partner or the platform can turn off four-eyes approval"));
            }
            policy.validate()?;
            after.payroll_policy = policy;
        }
        after.updated_at = self.clock.now();
        let action = if after.status != before.status { "tenant.status" } else { "tenant.update" };
        let audit = AuditRecord::by(actor, after.updated_at, action, "tenant", Some(id))
            .owned_by(after.partner_id, Some(id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let standing_changed = after.status != before.status || after.partner_id != before.partner_id;
        let saved = self.repo.update_tenant(after, audit).await?;
        if standing_changed {
            self.access.party_changed();
        }
        Ok(saved)
    }

    pub async fn delete(&self, actor: &Actor, id: Id, cascade: bool) -> Result<()> {
        let before = self.get(actor, id).await?;
        if matches!(actor.party, Party::Tenant { .. }) {
            return Err(Error::forbidden("a tenant cannot delete itself"));
        }
        let audit = AuditRecord::by(actor, self.clock.now(), "tenant.delete", "tenant", Some(id))
            .owned_by(before.partner_id, Some(id))
            .change(Some(&audit_json(&before)), None);
        for u in self.repo.delete_tenant(id, cascade, audit).await? {
            self.access.user_access_changed(u);
        }
        Ok(())
    }
}
