//! Partners (agents): resellers that bring tenants to the platform.
use atrium_kernel::{Id, ListQuery, Timestamp};
use serde::{Deserialize, Serialize};

/// Whether a partner's users may log in and act.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum PartnerStatus {
    /// Its users may log in and act.
    Active,
    /// Its users, its tenants' users and their API tokens are shut out.
    Disabled,
}

/// A partner (agent): a reseller that brings tenants to the platform.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Partner {
    /// The partner's id.
    pub id: Id,
    /// The partner's name.
    pub name: String,
    /// The contact person's name.
    pub contact_name: Option<String>,
    /// The contact phone number.
    pub phone: Option<String>,
    /// The contact e-mail address.
    pub email: Option<String>,
    /// `active` or `disabled`.
    pub status: PartnerStatus,
    /// When it was created.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    /// When it last changed.
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// A list of partners, as handed to the repository.
#[derive(Debug, Clone, Default)]
pub struct PartnerQuery {
    /// Paging, sort and keyword (name, contact name or phone).
    pub list: ListQuery<PartnerSort>,
    /// Only partners in this status.
    pub status: Option<PartnerStatus>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum PartnerSort {
    /// By id, which is creation order (the default, newest first).
    Id,
    /// By creation time.
    CreatedAt,
    /// By name.
    Name,
}
