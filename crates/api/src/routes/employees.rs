//! `/api/v1/employees`: employees, scoped to the caller's party. Id card and bank account
//! numbers are masked unless the caller holds `employee:read_sensitive`.
use actix_web::web;
use atrium_kernel::payroll::{HousingFundRate, SpecialDeduction};
use atrium_kernel::{Actor, Money};
use atrium_org::{Employee, EmployeePatch, EmployeeQuery, EmployeeStatus, ListQuery, NewEmployee, READ_SENSITIVE};
use chrono::{DateTime, NaiveDate, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use super::IdPath;
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
        .service(web::resource("/employees/{id}").route(web::get().to(get)).route(web::put().to(update)).route(web::delete().to(delete)));
}

/// An employee as shown to a caller.
#[derive(Debug, Serialize, ToSchema)]
pub struct EmployeeView {
    pub id: i64,
    pub tenant_id: i64,
    pub employee_no: Option<String>,
    pub name: String,
    pub phone: Option<String>,
    pub email: Option<String>,
    /// Masked (`110105********002X`) unless you hold `employee:read_sensitive`.
    pub id_card_no: Option<String>,
    pub bank_name: Option<String>,
    /// Masked (`************7890`) unless you hold `employee:read_sensitive`.
    pub bank_account: Option<String>,
    pub department: Option<String>,
    pub position: Option<String>,
    pub hire_date: Option<NaiveDate>,
    pub status: EmployeeStatus,
    /// Fen.
    pub base_salary: Money,
    /// Fen; the base salary when null.
    pub si_base: Option<Money>,
    pub housing_fund_rate: HousingFundRate,
    #[schema(value_type = Vec<Object>)]
    pub special_deductions: Vec<SpecialDeduction>,
    pub openid: Option<String>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
}

impl EmployeeView {
    pub fn of(e: Employee, actor: &Actor) -> Self {
        let reveal = actor.permissions.allows(READ_SENSITIVE);
        EmployeeView {
            id: e.id,
            tenant_id: e.tenant_id,
            employee_no: e.employee_no,
            name: e.name,
            phone: e.phone,
            email: e.email,
            id_card_no: e.id_card_no.map(|v| if reveal { v.as_str().to_owned() } else { v.masked() }),
            bank_name: e.bank_name,
            bank_account: e.bank_account.map(|v| if reveal { v.as_str().to_owned() } else { v.masked() }),
            department: e.department,
            position: e.position,
            hire_date: e.hire_date,
            status: e.status,
            base_salary: e.base_salary,
            si_base: e.si_base,
            housing_fund_rate: e.housing_fund_rate,
            special_deductions: e.special_deductions,
            openid: e.openid,
            created_at: e.created_at,
            updated_at: e.updated_at,
        }
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct EmployeeListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches name, phone or employee number.
    pub keyword: Option<String>,
    pub status: Option<EmployeeStatus>,
    pub tenant_id: Option<i64>,
    pub partner_id: Option<i64>,
    pub department: Option<String>,
    /// `id`, `created_at`, `name`, `employee_no` or `hire_date`, `-` for descending; default `-id`.
    pub sort: Option<String>,
}

/// List employees.
#[utoipa::path(get, path = "/api/v1/employees", tag = "employees", params(EmployeeListParams), security(("bearer" = [])),
    responses((status = 200, body = inline(atrium_kernel::Page<EmployeeView>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<EmployeeRead>, q: web::Query<EmployeeListParams>) -> ApiResult {
    let q = q.into_inner();
    let query = EmployeeQuery {
        list: ListQuery::parse(q.page, q.page_size, q.keyword, q.sort.as_deref())?,
        status: q.status,
        tenant_id: q.tenant_id,
        partner_id: q.partner_id,
        department: q.department,
    };
    let actor = &auth.actor;
    ok(state.employees.list(actor, query).await?.map(|e| EmployeeView::of(e, actor)))
}

/// Employee detail.
#[utoipa::path(get, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = EmployeeView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<EmployeeRead>, id: web::Path<i64>) -> ApiResult {
    ok(EmployeeView::of(state.employees.get(&auth.actor, id.into_inner()).await?, &auth.actor))
}

/// Create an employee.
#[utoipa::path(post, path = "/api/v1/employees", tag = "employees", request_body = NewEmployee, security(("bearer" = [])),
    responses((status = 200, body = EmployeeView), (status = 400), (status = 409, description = "Employee number or id card number already used in the tenant")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<EmployeeCreate>, body: Json<NewEmployee>) -> ApiResult {
    ok(EmployeeView::of(state.employees.create(&auth.actor, body.0).await?, &auth.actor))
}

/// Update an employee; absent fields stay, `null` clears.
#[utoipa::path(put, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), request_body = EmployeePatch, security(("bearer" = [])),
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
#[utoipa::path(delete, path = "/api/v1/employees/{id}", tag = "employees", params(IdPath), security(("bearer" = [])),
    responses((status = 200), (status = 404), (status = 409)))]
pub async fn delete(state: web::Data<AppState>, auth: Authorized<EmployeeDelete>, id: web::Path<i64>) -> ApiResult {
    state.employees.delete(&auth.actor, id.into_inner()).await?;
    ok(serde_json::json!({}))
}
