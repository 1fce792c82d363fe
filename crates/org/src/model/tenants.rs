//! Tenants (enterprises): the customers whose employees, payroll and orders Atrium runs.
use atrium_kernel::payroll::PayrollPolicy;
use atrium_kernel::{Id, ListQuery, Timestamp};
use serde::{Deserialize, Serialize};

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
