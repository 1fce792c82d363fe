//! `/api/v1/payroll-sheets`: a tenant's monthly payroll, scoped to the caller's party.
//! `draft` →calculate→ `calculated` →approve→ `approved` →send→ `sent`; anything else is 409.
use actix_web::web;
use atrium_kernel::{ListQuery, Money, Period};
use atrium_payroll::{Channel, DeliveryStatus, NewSheet, Sheet, SheetDetail, SheetItem, SheetPatch, SheetQuery, SheetStatus, SheetTotals};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

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

/// A payroll sheet; `items` only in the detail and the responses of its actions.
#[derive(Debug, Serialize, ToSchema)]
pub struct SheetView {
    pub id: i64,
    pub tenant_id: i64,
    /// `YYYY-MM`.
    #[schema(value_type = String, example = "2026-03")]
    pub period: Period,
    pub title: String,
    #[schema(value_type = String, example = "calculated")]
    pub status: SheetStatus,
    pub totals: SheetTotals,
    pub created_by: Option<i64>,
    pub calculated_by: Option<i64>,
    pub calculated_at: Option<DateTime<Utc>>,
    pub approved_by: Option<i64>,
    pub approved_at: Option<DateTime<Utc>>,
    pub sent_at: Option<DateTime<Utc>>,
    pub created_at: DateTime<Utc>,
    pub updated_at: DateTime<Utc>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<ItemView>>,
}

/// One employee's line: the adjustments, then (once calculated) the figures, then (once
/// sent) the delivery outcome. Money is fen.
#[derive(Debug, Serialize, ToSchema)]
pub struct ItemView {
    pub id: i64,
    pub employee_id: i64,
    pub employee_name: String,
    pub employee_no: Option<String>,
    pub allowance: Money,
    pub overtime: Money,
    pub bonus: Money,
    pub leave_deduction: Money,
    pub other_pre_tax_deduction: Money,
    pub after_tax_deduction: Money,
    pub annual_bonus: Money,
    pub gross: Option<Money>,
    pub si_base: Option<Money>,
    pub hf_base: Option<Money>,
    pub pension: Option<Money>,
    pub medical: Option<Money>,
    pub unemployment: Option<Money>,
    pub housing_fund: Option<Money>,
    pub contributions: Option<Money>,
    /// Special additional deductions counted this month (a late declaration catches up here).
    pub special_deduction: Option<Money>,
    pub months_employed: Option<u32>,
    pub cumulative_taxable: Option<Money>,
    pub cumulative_tax: Option<Money>,
    pub tax: Option<Money>,
    pub annual_bonus_tax: Option<Money>,
    pub net_pay: Option<Money>,
    #[schema(value_type = Option<String>, example = "delivered")]
    pub delivery_status: Option<DeliveryStatus>,
    #[schema(value_type = Option<String>, example = "wechat")]
    pub delivery_channel: Option<Channel>,
    pub delivery_error: Option<String>,
    pub delivery_attempts: u32,
    pub delivered_at: Option<DateTime<Utc>>,
}

impl ItemView {
    fn of(i: SheetItem) -> ItemView {
        let l = i.line;
        let a = i.adjustments;
        let d = i.delivery;
        ItemView {
            id: i.id,
            employee_id: i.employee_id,
            employee_name: i.employee_name,
            employee_no: i.employee_no,
            allowance: a.allowance,
            overtime: a.overtime,
            bonus: a.bonus,
            leave_deduction: a.leave_deduction,
            other_pre_tax_deduction: a.other_pre_tax_deduction,
            after_tax_deduction: a.after_tax_deduction,
            annual_bonus: a.annual_bonus,
            gross: l.map(|l| l.gross),
            si_base: l.map(|l| l.si_base),
            hf_base: l.map(|l| l.hf_base),
            pension: l.map(|l| l.pension),
            medical: l.map(|l| l.medical),
            unemployment: l.map(|l| l.unemployment),
            housing_fund: l.map(|l| l.housing_fund),
            contributions: l.map(|l| l.contributions),
            special_deduction: l.map(|l| l.special_deduction),
            months_employed: l.map(|l| l.months_employed),
            cumulative_taxable: l.map(|l| l.cumulative_taxable),
            cumulative_tax: l.map(|l| l.cumulative_tax),
            tax: l.map(|l| l.tax),
            annual_bonus_tax: l.map(|l| l.annual_bonus_tax),
            net_pay: l.map(|l| l.net_pay),
            delivery_status: d.as_ref().map(|d| d.status),
            delivery_channel: d.as_ref().and_then(|d| d.channel),
            delivery_attempts: d.as_ref().map_or(0, |d| d.attempts),
            delivered_at: d.as_ref().map(|d| d.at),
            delivery_error: d.and_then(|d| d.error),
        }
    }
}

impl SheetView {
    fn of(s: Sheet, items: Option<Vec<SheetItem>>) -> SheetView {
        SheetView {
            id: s.id,
            tenant_id: s.tenant_id,
            period: s.period,
            title: s.title,
            status: s.status,
            totals: s.totals,
            created_by: s.created_by,
            calculated_by: s.calculated_by,
            calculated_at: s.calculated_at,
            approved_by: s.approved_by,
            approved_at: s.approved_at,
            sent_at: s.sent_at,
            created_at: s.created_at,
            updated_at: s.updated_at,
            items: items.map(|items| items.into_iter().map(ItemView::of).collect()),
        }
    }

    fn detail(d: SheetDetail) -> SheetView {
        SheetView::of(d.sheet, Some(d.items))
    }
}

#[derive(Debug, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
pub struct SheetListParams {
    pub page: Option<i64>,
    pub page_size: Option<i64>,
    /// Matches the title.
    pub keyword: Option<String>,
    /// `draft`, `calculated`, `approved` or `sent`.
    #[param(value_type = Option<String>)]
    pub status: Option<SheetStatus>,
    pub tenant_id: Option<i64>,
    pub partner_id: Option<i64>,
    /// `YYYY-MM`.
    #[param(value_type = Option<String>)]
    pub period: Option<String>,
    /// `id`, `created_at` or `period`, `-` for descending; default `-id`.
    pub sort: Option<String>,
}

/// List payroll sheets (without items).
#[utoipa::path(get, path = "/api/v1/payroll-sheets", tag = "payroll", params(SheetListParams), security(("bearer" = [])),
    responses((status = 200, body = inline(atrium_kernel::Page<SheetView>)), (status = 400), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<PayrollRead>, q: web::Query<SheetListParams>) -> ApiResult {
    let q = q.into_inner();
    let query = SheetQuery {
        list: ListQuery::parse(q.page, q.page_size, q.keyword, q.sort.as_deref())?,
        status: q.status,
        tenant_id: q.tenant_id,
        partner_id: q.partner_id,
        period: q.period.as_deref().map(|p| Period::parse_field("period", p)).transpose()?,
    };
    ok(state.payroll.list(&auth.actor, query).await?.map(|s| SheetView::of(s, None)))
}

/// Payroll sheet detail with its items.
#[utoipa::path(get, path = "/api/v1/payroll-sheets/{id}", tag = "payroll", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<PayrollRead>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::detail(state.payroll.get(&auth.actor, id.into_inner()).await?))
}

/// Create a payroll sheet (`draft`). Without `items` it covers the tenant's active employees.
#[utoipa::path(post, path = "/api/v1/payroll-sheets", tag = "payroll", request_body = NewSheet, security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 400), (status = 409, description = "The tenant already has a sheet for the period")))]
pub async fn create(state: web::Data<AppState>, auth: Authorized<PayrollCreate>, body: Json<NewSheet>) -> ApiResult {
    ok(SheetView::detail(state.payroll.create(&auth.actor, body.0).await?))
}

/// Update a draft or calculated sheet's title or items (items replace the sheet's items);
/// the sheet goes back to `draft`.
#[utoipa::path(put, path = "/api/v1/payroll-sheets/{id}", tag = "payroll", params(IdPath), request_body = SheetPatch, security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 400), (status = 404), (status = 409, description = "The sheet is approved or sent")))]
pub async fn update(state: web::Data<AppState>, auth: Authorized<PayrollUpdate>, id: web::Path<i64>, body: Json<SheetPatch>) -> ApiResult {
    ok(SheetView::detail(state.payroll.update(&auth.actor, id.into_inner(), body.0).await?))
}

/// Calculate salaries: contributions, cumulative income tax and net pay of every item, with
/// year-to-date figures from the tenant's approved or sent sheets of the year.
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/calculate", tag = "payroll", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 400, description = "An item's input is inconsistent (fields name the item)"),
        (status = 404), (status = 409, description = "The sheet is approved or sent")))]
pub async fn calculate(state: web::Data<AppState>, auth: Authorized<PayrollCalculate>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::detail(state.payroll.calculate(&auth.actor, id.into_inner()).await?))
}

/// Approve a calculated sheet. With the tenant's `four_eyes` (default) the approver must not
/// be the user who calculated it (403).
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/approve", tag = "payroll", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 403), (status = 404), (status = 409, description = "The sheet is not calculated")))]
pub async fn approve(state: web::Data<AppState>, auth: Authorized<PayrollApprove>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::detail(state.payroll.approve(&auth.actor, id.into_inner()).await?))
}

/// Send pay slips: each employee's slip goes to the messaging platform (openid), else SMS or
/// e-mail; each item records its outcome. Sending again retries only failed items.
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/send", tag = "payroll", params(IdPath), security(("bearer" = [])),
    responses((status = 200, body = SheetView), (status = 404), (status = 409, description = "The sheet is not approved, or a send is in progress")))]
pub async fn send(state: web::Data<AppState>, auth: Authorized<PayrollSend>, id: web::Path<i64>) -> ApiResult {
    ok(SheetView::detail(state.payroll.send(&auth.actor, id.into_inner()).await?))
}
