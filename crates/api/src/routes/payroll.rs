//! `/api/v1/payroll-sheets`: a tenant's monthly payroll, scoped to the caller's party.
//! `draft` →calculate→ `calculated` →approve→ `approved` →send→ `sent`; anything else is 409.
use actix_web::web;
use atrium_payroll::{NewSheet, SheetListParams, SheetPatch, SheetQuery, SheetView};

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, Json};
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    PayrollRead = perm::PAYROLL_READ,
    PayrollCreate = perm::PAYROLL_CREATE,
    PayrollUpdate = perm::PAYROLL_UPDATE,
    PayrollCalculate = perm::PAYROLL_CALCULATE,
    PayrollApprove = perm::PAYROLL_APPROVE,
    PayrollSend = perm::PAYROLL_SEND
);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/payroll-sheets").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/payroll-sheets/{id}").route(web::get().to(get)).route(web::put().to(update)))
        .service(web::resource("/payroll-sheets/{id}/calculate").route(web::post().to(calculate)))
        .service(web::resource("/payroll-sheets/{id}/approve").route(web::post().to(approve)))
        .service(web::resource("/payroll-sheets/{id}/send").route(web::post().to(send)));
}

/// List payroll sheets (without items).
#[utoipa::path(get, path = "/api/v1/payroll-sheets", tag = "payroll", params(SheetListParams), security(("bearer" = ["payroll:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<SheetView>)), (status = 400), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<PayrollRead>, q: web::Query<SheetListParams>) -> ApiResult {
    let query = SheetQuery::try_from(q.into_inner())?;
    ok(state.payroll.list(&auth.actor, query).await?.map(SheetView::from))
}

/// Payroll sheet detail with its items.
#[utoipa::path(get, path = "/api/v1/payroll-sheets/{id}", tag = "payroll", params(IdPath), security(("bearer" = ["payroll:read"])),
    responses((status = 200, body = SheetView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<PayrollRead>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::from(state.payroll.get(&auth.actor, id.into_inner()).await?))
}

/// Create a payroll sheet (`draft`): the period's `regular` sheet (without `items` it covers
/// the tenant's active employees), or a `supplementary` one paying extra for a period whose
/// regular sheet is approved or sent.
#[utoipa::path(post, path = "/api/v1/payroll-sheets", tag = "payroll", request_body = NewSheet, security(("bearer" = ["payroll:create"])),
    responses((status = 200, body = SheetView), (status = 400, description = "Bad input, e.g. a leave deduction on a supplementary item (fields name the item)"),
        (status = 409, description = "The tenant already has a regular sheet for the period, or (supplementary) the period's regular sheet is not approved or sent")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<PayrollCreate>, body: Json<NewSheet>) -> ApiResult {
    ok(SheetView::from(state.payroll.create(&auth.actor, body.0).await?))
}

/// Update a draft or calculated sheet's title or items (items replace the sheet's items);
/// the sheet goes back to `draft`.
#[utoipa::path(put, path = "/api/v1/payroll-sheets/{id}", tag = "payroll", params(IdPath), request_body = SheetPatch, security(("bearer" = ["payroll:update"])),
    responses((status = 200, body = SheetView), (status = 400), (status = 404), (status = 409, description = "The sheet is approved or sent")))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<PayrollUpdate>, id: web::Path<i64>, body: Json<SheetPatch>) -> ApiResult {
    ok(SheetView::from(state.payroll.update(&auth.actor, id.into_inner(), body.0).await?))
}

/// Calculate salaries: contributions, cumulative income tax and net pay of every item, with
/// year-to-date figures from the tenant's approved or sent sheets of every kind of the year.
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/calculate", tag = "payroll", params(IdPath), security(("bearer" = ["payroll:calculate"])),
    responses((status = 200, body = SheetView), (status = 400, description = "An item's input is inconsistent (fields name the item)"),
        (status = 404), (status = 409, description = "The sheet is approved or sent, or items cannot be calculated (fields name them: \
            an inconsistent item, an annual bonus already taxed separately this year on another calculated, approved or sent sheet)")))]
pub async fn calculate(state: web::Data<AppState>, auth: Authorized<PayrollCalculate>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::from(state.payroll.calculate(&auth.actor, id.into_inner()).await?))
}

/// Approve a calculated sheet. With the tenant's `four_eyes` (default) the approver must not
/// be the user who calculated it (403).
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/approve", tag = "payroll", params(IdPath), security(("bearer" = ["payroll:approve"])),
    responses((status = 200, body = SheetView), (status = 403), (status = 404), (status = 409, description = "The sheet is not calculated; \
        another sheet of the tax year was approved since it was calculated (recalculate it); or an annual bonus on it is already taxed \
        separately this year on another approved or sent sheet (fields name the items)")))]
pub async fn approve(state: web::Data<AppState>, auth: Authorized<PayrollApprove>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::from(state.payroll.approve(&auth.actor, id.into_inner()).await?))
}

/// Send pay slips: each employee's slip goes to the messaging platform (openid), else SMS or
/// e-mail; each item records its outcome. Sending again retries only failed items.
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/send", tag = "payroll", params(IdPath), security(("bearer" = ["payroll:send"])),
    responses((status = 200, body = SheetView), (status = 404), (status = 409, description = "The sheet is not approved, or a send is in progress")))]
pub async fn send(state: web::Data<AppState>, auth: Authorized<PayrollSend>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::from(state.payroll.send(&auth.actor, id.into_inner()).await?))
}
