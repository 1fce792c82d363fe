//! `/tenants` requests.
use atrium_kernel::payroll::PayrollPolicy;
use atrium_kernel::{Email, Error, Id, Label, ListQuery, Name, Phone, patch};
use serde::Deserialize;

use crate::ids::CreditCode;
use crate::model::{TenantQuery, TenantStatus};

/// `POST /tenants` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Example Trading Co.", "partner_id": 1, "contact_name": "Han Meimei", "phone": "+8613800138002"})))]
pub struct NewTenant {
    /// The enterprise's name, up to 128 characters.
    pub name: Name,
    /// Platform callers may name any partner (or none); partner callers get their own.
    pub partner_id: Option<Id>,
    /// The unified social credit code (18 characters, check character checked); unique.
    pub credit_code: Option<CreditCode>,
    /// The contact person's name.
    pub contact_name: Option<Label>,
    /// The contact phone number.
    pub phone: Option<Phone>,
    /// The contact e-mail address.
    pub email: Option<Email>,
    /// `active` (the default), `pending` or `disabled`.
    pub status: Option<TenantStatus>,
    /// The payroll policy; the default (Beijing's bases and rates, four-eyes on) when absent.
    pub payroll_policy: Option<PayrollPolicy>,
}

/// `PUT /tenants/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"contact_name": "Li Lei", "status": "active"})))]
pub struct TenantPatch {
    /// A new name.
    pub name: Option<Name>,
    /// Platform callers only: move the tenant to another partner (or none, with null).
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Id>))]
    pub partner_id: Option<Option<Id>>,
    /// A new credit code; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<CreditCode>))]
    pub credit_code: Option<Option<CreditCode>>,
    /// A new contact name; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub contact_name: Option<Option<Label>>,
    /// A new contact phone number; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    /// A new contact e-mail address; `null` clears it.
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    /// `pending`, `active` or `disabled`; disabling shuts the tenant's users out at once.
    pub status: Option<TenantStatus>,
    /// A new payroll policy, replacing the whole policy (a tenant may not turn four-eyes off).
    pub payroll_policy: Option<PayrollPolicy>,
}

/// `GET /tenants` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TenantListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Tenants per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches name, credit code, contact name or phone.
    pub keyword: Option<String>,
    /// Only tenants in this status.
    pub status: Option<TenantStatus>,
    /// Only this partner's tenants (platform users).
    pub partner_id: Option<i64>,
    /// `id`, `created_at` or `name`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::TenantSort>))]
    pub sort: Option<String>,
}

/// Validates the parameters; a 400 naming the offending one otherwise.
impl TryFrom<TenantListParams> for TenantQuery {
    type Error = Error;
    fn try_from(p: TenantListParams) -> Result<Self, Error> {
        Ok(TenantQuery {
            list: ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?,
            status: p.status,
            partner_id: p.partner_id,
        })
    }
}
