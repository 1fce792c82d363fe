//! `/partners` requests.
use atrium_kernel::{Email, Error, Label, ListQuery, Name, Phone, patch};
use serde::Deserialize;

use crate::model::{PartnerQuery, PartnerStatus};

/// `POST /partners` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"name": "Acme Partners", "contact_name": "Wang Fang", "phone": "+8613800138001", "email": "ops@acme.example"})))]
pub struct NewPartner {
    /// The partner's name, up to 128 characters.
    pub name: Name,
    /// The contact person's name.
    pub contact_name: Option<Label>,
    /// The contact phone number.
    pub phone: Option<Phone>,
    /// The contact e-mail address.
    pub email: Option<Email>,
    /// `active` (the default) or `disabled`.
    pub status: Option<PartnerStatus>,
}

/// `PUT /partners/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"contact_name": "Zhao Lei", "email": null})))]
pub struct PartnerPatch {
    /// A new name.
    pub name: Option<Name>,
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
    /// `active` or `disabled`; disabling shuts the partner's and its tenants' users out at once.
    pub status: Option<PartnerStatus>,
}

/// `GET /partners` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct PartnerListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Partners per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches name, contact name or phone.
    pub keyword: Option<String>,
    /// Only partners in this status.
    pub status: Option<PartnerStatus>,
    /// `id`, `created_at` or `name`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::PartnerSort>))]
    pub sort: Option<String>,
}

/// Validates the parameters; a 400 naming the offending one otherwise.
impl TryFrom<PartnerListParams> for PartnerQuery {
    type Error = Error;
    fn try_from(p: PartnerListParams) -> Result<Self, Error> {
        Ok(PartnerQuery { list: ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?, status: p.status })
    }
}
