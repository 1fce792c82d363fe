//! What clients send to and receive from org's routes (`/partners`, `/tenants`, `/employees`,
//! `/audit-logs`): request bodies, list parameters and response views. Partners, tenants and
//! audit entries are shown as the model holds them; employees through [`EmployeeView`], which
//! masks their sensitive numbers.
mod audit;
mod employees;
mod partners;
mod tenants;

pub use audit::AuditListParams;
pub use employees::{EmployeeListParams, EmployeeNo, EmployeePatch, EmployeeView, NewEmployee, OpenId, READ_SENSITIVE};
pub use partners::{NewPartner, PartnerListParams, PartnerPatch};
pub use tenants::{NewTenant, TenantListParams, TenantPatch};
