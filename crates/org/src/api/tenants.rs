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
    pub name: Name,
    /// Platform callers may name any partner (or none); partner callers get their own.
    pub partner_id: Option<Id>,
    pub credit_code: Option<CreditCode>,
    pub contact_name: Option<Label>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    pub status: Option<TenantStatus>,
    pub payroll_policy: Option<PayrollPolicy>,
}

/// `PUT /tenants/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"contact_name": "Li Lei", "status": "active"})))]
pub struct TenantPatch {
    pub name: Option<Name>,
    /// Platform callers only: move the tenant to another partner (or none, with null).
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Id>))]
    pub partner_id: Option<Option<Id>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<CreditCode>))]
    pub credit_code: Option<Option<CreditCode>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub contact_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    pub status: Option<TenantStatus>,
    pub payroll_policy: Option<PayrollPolicy>,
}

/// `GET /tenants` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct TenantListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches name, credit code, contact name or phone.
    pub keyword: Option<String>,
    pub status: Option<TenantStatus>,
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
