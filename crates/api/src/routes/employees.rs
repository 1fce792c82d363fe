//! `/api/v1/employees`: employees, scoped to the caller's party. Id card and bank account
//! numbers are masked unless the caller holds `employee:read_sensitive`.
use crate::query::Query;
use actix_web::web;
use atrium_org::{EmployeeListParams, EmployeePatch, EmployeeQuery, EmployeeView, NewEmployee};
use atrium_payroll::{TaxYearParams, TaxYearView};

use super::IdPath;
use super::payroll::PayrollRead;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    EmployeeRead = perm::EMPLOYEE_READ,
    EmployeeCreate = perm::EMPLOYEE_CREATE,
    EmployeeUpdate = perm::EMPLOYEE_UPDATE,
    EmployeeDelete = perm::EMPLOYEE_DELETE
);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/employees").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/employees/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)))
        .service(web::resource("/employees/{id}/tax-year").route(web::get().to(tax_year)));
}

/// List employees.
#[utoipa::path(get, path = "/api/v1/employees", tag = "employees", params(EmployeeListParams), security(("bearer" = ["employee:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<EmployeeView>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<EmployeeRead>, q: Query<EmployeeListParams>) -> ApiResult {
    let query = EmployeeQuery::try_from(q.into_inner())?;
    let actor = &auth.actor;
    ok(state.employees.list(actor, query).await?.map(|e| EmployeeView::of(e, actor)))
}

/// Employee detail.
#[utoipa::path(get, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), security(("bearer" = ["employee:read"])),
    responses((status = 200, body = EmployeeView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<EmployeeRead>, id: web::Path<i64>) -> ApiResult {
    ok(EmployeeView::of(state.employees.get(&auth.actor, id.into_inner()).await?, &auth.actor))
}

/// Create an employee.
#[utoipa::path(post, path = "/api/v1/employees", tag = "employees", request_body = NewEmployee, security(("bearer" = ["employee:create"])),
    responses((status = 200, body = EmployeeView), (status = 400), (status = 409, description = "Employee number or id card number already used in the tenant")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<EmployeeCreate>, body: Json<NewEmployee>) -> ApiResult {
    ok(EmployeeView::of(state.employees.create(&auth.actor, body.0).await?, &auth.actor))
}

/// Update an employee; absent fields stay, `null` clears.
#[utoipa::path(put, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), request_body = EmployeePatch, security(("bearer" = ["employee:update"])),
    responses((status = 200, body = EmployeeView), (status = 400), (status = 404), (status = 409)))]
pub async fn update(
    state: web::Data<AppState>,
    auth: Authorized<EmployeeUpdate>,
    id: web::Path<i64>,
    body: Json<EmployeePatch>,
) -> ApiResult {
    ok(EmployeeView::of(state.employees.update(&auth.actor, id.into_inner(), body.0).await?, &auth.actor))
}

/// Delete an employee. 409 once payroll records refer to it (set `status: left` instead).
#[utoipa::path(delete, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), security(("bearer" = ["employee:delete"])),
    responses((status = 200), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<EmployeeDelete>, id: web::Path<i64>) -> ApiResult {
    state.employees.delete(&auth.actor, id.into_inner()).await?;
    ok(serde_json::json!({}))
}

/// An employee's tax year: what approved and sent payroll sheets paid and withheld, and the
/// annual settlement estimate.
///
/// From the employee's tenant's approved and sent sheets of every kind (regular and
/// supplementary): month by month gross, contributions, special deductions, cumulative taxable
/// income, tax withheld and the separately taxed annual bonus with its tax; the year's sums;
/// and the annual settlement as far as these sheets show (`to_pay` or `to_refund`; income from
/// elsewhere is unknown). The caller needs `employee:read` as well as `payroll:read`.
#[utoipa::path(get, path = "/api/v1/employees/{id}/tax-year", tag = "employees", params(IdPath, TaxYearParams),
    security(("bearer" = ["payroll:read"])),
    responses((status = 200, body = TaxYearView), (status = 400, description = "`year` is missing, not a number or outside 2000–2100"),
        (status = 403, description = "Without `payroll:read` or without `employee:read`"), (status = 404)))]
pub async fn tax_year(state: web::Data<AppState>, auth: Authorized<PayrollRead>, id: web::Path<i64>, q: Query<TaxYearParams>) -> ApiResult {
    auth.actor.require(perm::EMPLOYEE_READ.name)?;
    let year = q.year()?;
    ok(TaxYearView::from(state.payroll.tax_year(&auth.actor, id.into_inner(), year).await?))
}
