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
    pub name: Name,
    pub contact_name: Option<Label>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    pub status: Option<PartnerStatus>,
}

/// `PUT /partners/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"contact_name": "Zhao Lei", "email": null})))]
pub struct PartnerPatch {
    pub name: Option<Name>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Label>))]
    pub contact_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Phone>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<Email>))]
    pub email: Option<Option<Email>>,
    pub status: Option<PartnerStatus>,
}

/// `GET /partners` parameters.
#[derive(Debug, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct PartnerListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches name, contact name or phone.
    pub keyword: Option<String>,
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
