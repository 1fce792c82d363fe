//! Tenants (enterprises): the customers whose employees, payroll and orders Atrium runs.
use atrium_kernel::payroll::PayrollPolicy;
use atrium_kernel::{Id, ListQuery, Timestamp};
use serde::{Deserialize, Serialize};

/// Whether a tenant's users may log in and act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum TenantStatus {
    /// Registered by itself; waits for a platform or partner admin to activate it.
    Pending,
    /// Its users may log in and act.
    Active,
    /// Its users, and its API tokens, are shut out; its records are kept.
    Disabled,
}

/// A tenant (enterprise): its identity, contact and payroll policy.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Tenant {
    /// The tenant's id.
    pub id: Id,
    /// The partner that brought it; null for a tenant of the platform's own.
    pub partner_id: Option<Id>,
    /// The enterprise's name.
    pub name: String,
    /// Unified social credit code (GB 32100).
    pub credit_code: Option<String>,
    /// The contact person's name.
    pub contact_name: Option<String>,
    /// The contact phone number.
    pub phone: Option<String>,
    /// The contact e-mail address.
    pub email: Option<String>,
    /// `pending`, `active` or `disabled`.
    pub status: TenantStatus,
    /// The payroll policy its sheets are calculated with: contribution bases and rates, and
    /// four-eyes approval.
    pub payroll_policy: PayrollPolicy,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

impl Tenant {
    /// A new, active tenant named `name` under `partner_id`, with the default payroll policy
    /// and nothing else filled in; not stored yet (id 0).
    pub fn draft(partner_id: Option<Id>, name: impl Into<String>, at: Timestamp) -> Tenant {
        Tenant {
            id: 0,
            partner_id,
            name: name.into(),
            credit_code: None,
            contact_name: None,
            phone: None,
            email: None,
            status: TenantStatus::Active,
            payroll_policy: PayrollPolicy::default(),
            created_at: at,
            updated_at: at,
        }
    }
}

/// A list of tenants, as handed to the repository. Every filter narrows the caller's scope.
#[derive(Debug, Clone, Default)]
pub struct TenantQuery {
    /// Paging, sort and keyword (name, credit code, contact name or phone).
    pub list: ListQuery<TenantSort>,
    /// Only tenants in this status.
    pub status: Option<TenantStatus>,
    /// Only this partner's tenants.
    pub partner_id: Option<Id>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum TenantSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
    /// By name.
    Name,
}
