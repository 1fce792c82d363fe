//! Route handlers, one module per resource.
pub mod audit;
pub mod auth;
pub mod campaigns;
pub mod doc_admin;
pub mod docs;
pub mod employees;
pub mod health;
pub mod orders;
pub mod partners;
pub mod payments;
pub mod payroll;
pub mod releases;
pub mod roles;
pub mod tenants;
pub mod users;

use serde::Deserialize;
use utoipa::IntoParams;

/// A record id in the path.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(names("id"), parameter_in = Path)]
pub struct IdPath(pub i64);

/// `?tenant_id=`: whose record (a payment configuration, a mini-program's authorisation and
/// versions).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct TenantParams {
    /// Required for platform and partner callers; a tenant caller's own tenant otherwise.
    #[param(required = true, value_type = i64, minimum = 1)]
    pub tenant_id: Option<atrium_kernel::Id>,
}

/// Options of a DELETE.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct DeleteParams {
    /// Also delete what belongs to the record (tenants' employees and users, …).
    pub cascade: Option<bool>,
}

/// Routes of `/api/v1` besides auth.
pub fn configure(cfg: &mut actix_web::web::ServiceConfig) {
    auth::configure(cfg);
    users::configure(cfg);
    partners::configure(cfg);
    tenants::configure(cfg);
    employees::configure(cfg);
    payroll::configure(cfg);
    payments::configure(cfg);
    orders::configure(cfg);
    releases::configure(cfg);
    campaigns::configure(cfg);
    roles::configure(cfg);
    audit::configure(cfg);
}
