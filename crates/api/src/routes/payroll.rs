//! `/api/v1/payroll-sheets`: a tenant's monthly payroll, scoped to the caller's party.
//! `draft` →calculate→ `calculated` →approve→ `approved` →send→ `sent`; anything else is 409.
//! Sheets as spreadsheet files: the export, the bank file, the import template (binary
//! answers with a `Content-Disposition` file name), and the import (`multipart/form-data`,
//! the file in memory up to `MAX_IMPORT_BYTES`, 413 above).
use crate::query::Query;
use actix_multipart::Multipart;
use actix_web::http::header;
use actix_web::middleware::from_fn;
use actix_web::{HttpMessage, HttpRequest, HttpResponse, web};
use atrium_kernel::Error;
use atrium_payroll::files::{MAX_IMPORT_BYTES, SheetFile};
use atrium_payroll::{BankFileParams, ExportParams, NewSheet, SheetListParams, SheetPatch, SheetQuery, SheetView, TemplateParams};
use futures_util::StreamExt;

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::error::ApiError;
use crate::extract::{Authorized, Json};
use crate::{limits, permission};
use atrium_kernel::permission as perm;

/// What an import's multipart body may carry besides the file: the part's headers and the
/// boundaries.
const FORM_OVERHEAD_BYTES: u64 = 64 * 1024;

permission!(
    PayrollRead = perm::PAYROLL_READ,
    PayrollCreate = perm::PAYROLL_CREATE,
    PayrollUpdate = perm::PAYROLL_UPDATE,
    PayrollCalculate = perm::PAYROLL_CALCULATE,
    PayrollApprove = perm::PAYROLL_APPROVE,
    PayrollSend = perm::PAYROLL_SEND
);

pub fn configure(cfg: &mut web::ServiceConfig) {
    // Before `/payroll-sheets/{id}`, which would take `import-template` for an id.
    cfg.service(web::resource("/payroll-sheets/import-template").route(web::get().to(import_template)))
        .service(web::resource("/payroll-sheets").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/payroll-sheets/{id}").route(web::get().to(get)).route(web::put().to(update)))
        .service(web::resource("/payroll-sheets/{id}/export").route(web::get().to(export)))
        .service(web::resource("/payroll-sheets/{id}/bank-file").route(web::get().to(bank_file)))
        // A declared body over the limit is refused before the token check, as on the document interface.
        .service(
            web::resource("/payroll-sheets/{id}/items/import")
                .wrap(from_fn(|req, next| limits::declared_over((MAX_IMPORT_BYTES + FORM_OVERHEAD_BYTES) as usize, req, next)))
                .route(web::post().to(import)),
        )
        .service(web::resource("/payroll-sheets/{id}/calculate").route(web::post().to(calculate)))
        .service(web::resource("/payroll-sheets/{id}/approve").route(web::post().to(approve)))
        .service(web::resource("/payroll-sheets/{id}/send").route(web::post().to(send)));
}

/// List payroll sheets (without items).
#[utoipa::path(get, path = "/api/v1/payroll-sheets", tag = "payroll", params(SheetListParams), security(("bearer" = ["payroll:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<SheetView>)), (status = 400), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<PayrollRead>, q: Query<SheetListParams>) -> ApiResult {
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

/// A spreadsheet file as the answer: its content type and an attachment file name.
fn file(f: SheetFile) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(f.content_type)
        .insert_header((header::CONTENT_DISPOSITION, format!("attachment; filename=\"{}\"", f.file_name)))
        .body(f.bytes)
}

/// Export a sheet as a spreadsheet: one row per item with every input and computed column
/// (named as the item's fields), then a totals row; money as yuan with two decimals (xlsx:
/// numbers formatted `0.00`; csv: UTF-8 with a byte order mark). Each download is in the
/// audit trail (`payroll_sheet.export`).
#[utoipa::path(get, path = "/api/v1/payroll-sheets/{id}/export", tag = "payroll", params(IdPath, ExportParams),
    security(("bearer" = ["payroll:read"])),
    responses((status = 200, description = "The sheet as a file, `Content-Disposition: attachment; filename=\"payroll-<period>-<id>.<format>\"`",
            content((atrium_payroll::SpreadsheetFile = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                (atrium_payroll::SpreadsheetFile = "text/csv; charset=utf-8")),
            headers(("Content-Disposition" = String, description = "attachment; filename=\"payroll-2026-03-12.xlsx\""))),
        (status = 400, description = "`format` is not xlsx or csv"), (status = 404),
        (status = 409, description = "A column's total is too large to write")))]
pub async fn export(
    state: web::Data<AppState>,
    auth: Authorized<PayrollRead>,
    id: web::Path<i64>,
    q: Query<ExportParams>,
) -> Result<HttpResponse, ApiError> {
    Ok(file(state.payroll.export(&auth.actor, id.into_inner(), q.into_inner()).await?))
}

/// The batch-transfer file of an approved or sent sheet, for a bank's corporate portal: a
/// header (户名 account name, 账号 account number, 开户行 bank, 金额 amount in yuan, 备注
/// remark), then one line per employee with a net pay above 0 — their bank account, net pay and
/// a remark naming the period (`2026-03工资`). `encoding=gbk` for portals that want GBK. The
/// account numbers are in full: the caller needs `employee:read_sensitive` as well. Each
/// download is in the audit trail (`payroll_sheet.bank_file`).
#[utoipa::path(get, path = "/api/v1/payroll-sheets/{id}/bank-file", tag = "payroll", params(IdPath, BankFileParams),
    security(("bearer" = ["payroll:read"])),
    responses((status = 200, description = "The bank file, `Content-Disposition: attachment; filename=\"bank-transfer-<period>-<id>.csv\"`",
            content((atrium_payroll::SpreadsheetFile = "text/csv; charset=utf-8"), (atrium_payroll::SpreadsheetFile = "text/csv; charset=gbk")),
            headers(("Content-Disposition" = String, description = "attachment; filename=\"bank-transfer-2026-03-12.csv\""))),
        (status = 400, description = "`format` is not csv, or `encoding` not utf-8 or gbk"),
        (status = 403, description = "Without `payroll:read`, or without `employee:read_sensitive`"), (status = 404),
        (status = 409, description = "The sheet is not approved or sent; an employee it pays has no bank account (fields name the items, \
            no file); or a name GBK cannot write (download it in utf-8)")))]
pub async fn bank_file(
    state: web::Data<AppState>,
    auth: Authorized<PayrollRead>,
    id: web::Path<i64>,
    q: Query<BankFileParams>,
) -> Result<HttpResponse, ApiError> {
    Ok(file(state.payroll.bank_file(&auth.actor, id.into_inner(), q.into_inner()).await?))
}

/// The import template: a header row naming `employee_no`, `employee_name` and the amount
/// columns (`allowance`, `overtime`, `bonus`, `leave_deduction`, `other_pre_tax_deduction`,
/// `after_tax_deduction`, `annual_bonus`); xlsx with the employee columns formatted as text,
/// or csv.
#[utoipa::path(get, path = "/api/v1/payroll-sheets/import-template", tag = "payroll", params(TemplateParams),
    security(("bearer" = ["payroll:read"])),
    responses((status = 200, description = "The template, `Content-Disposition: attachment; filename=\"payroll-import-template.<format>\"`",
            content((atrium_payroll::SpreadsheetFile = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"),
                (atrium_payroll::SpreadsheetFile = "text/csv; charset=utf-8")),
            headers(("Content-Disposition" = String, description = "attachment; filename=\"payroll-import-template.xlsx\""))),
        (status = 400, description = "`format` is not xlsx or csv")))]
pub async fn import_template(
    state: web::Data<AppState>,
    _auth: Authorized<PayrollRead>,
    q: Query<TemplateParams>,
) -> Result<HttpResponse, ApiError> {
    Ok(file(state.payroll.import_template(q.into_inner()).await?))
}

/// Import item inputs from a spreadsheet into a draft or calculated sheet (`multipart/form-data`,
/// the file in the part `file`, xlsx or csv told apart by content): a header row, then one row
/// per employee keyed by `employee_no`, amounts in yuan with at most two decimals. A row
/// replaces that employee's inputs (a column the file leaves out is 0) or adds the employee to
/// the sheet; other items stay. All or nothing: errors name the row as the spreadsheet shows it
/// (the header is row 1) and the column — `rows[3].bonus`, `columns.<name>`, `file` — and
/// nothing changes. The sheet goes back to `draft`, as an edit does.
#[utoipa::path(post, path = "/api/v1/payroll-sheets/{id}/items/import", tag = "payroll", params(IdPath),
    request_body(content((atrium_payroll::ItemImportForm = "multipart/form-data"))),
    security(("bearer" = ["payroll:update"])),
    responses((status = 200, body = SheetView),
        (status = 400, description = "The file is not xlsx or csv, is empty, or has errors (fields name the rows and columns: unknown or \
            missing columns, unknown or repeated employee numbers, bad amounts, more rows than the tenant has employees)"),
        (status = 404), (status = 409, description = "The sheet is approved or sent"),
        (status = 413, description = "The file is larger than 16 MiB")))]
pub async fn import(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authorized<PayrollUpdate>,
    id: web::Path<i64>,
    payload: web::Payload,
) -> ApiResult {
    let multipart = req.mime_type().ok().flatten().is_some_and(|m| m.essence_str() == "multipart/form-data");
    if !multipart {
        return Err(ApiError::bad_request("Content-Type must be multipart/form-data, with the spreadsheet in a part named file"));
    }
    let bytes = read_file_part(Multipart::new(req.headers(), payload), MAX_IMPORT_BYTES).await?;
    ok(SheetView::from(state.payroll.import(&auth.actor, id.into_inner(), bytes).await?))
}

/// The one part of an import, `file`, read into memory (a spreadsheet is decoded whole) up to
/// `max` bytes, 413 past them. Another part, or `file` twice, is a 400 naming it.
async fn read_file_part(mut form: Multipart, max: u64) -> Result<Vec<u8>, ApiError> {
    let malformed = |e: actix_multipart::MultipartError| ApiError::bad_request(format!("malformed multipart body: {e}"));
    let mut file: Option<Vec<u8>> = None;
    while let Some(part) = form.next().await {
        let mut part = part.map_err(malformed)?;
        match part.name().unwrap_or_default() {
            "file" if file.is_some() => return Err(ApiError(Error::invalid("file", "is sent twice"))),
            "file" => {}
            "" => return Err(ApiError::bad_request("a multipart part has no name; send the spreadsheet in a part named file")),
            other => return Err(ApiError(Error::invalid(other.to_owned(), "is not a part of this form (send the spreadsheet as file)"))),
        }
        let mut bytes = Vec::new();
        while let Some(chunk) = part.next().await {
            let chunk = chunk.map_err(malformed)?;
            if (bytes.len() + chunk.len()) as u64 > max {
                return Err(ApiError(Error::TooLarge(format!("file: larger than {} MiB", max / (1024 * 1024)))));
            }
            bytes.extend_from_slice(&chunk);
        }
        file = Some(bytes);
    }
    file.ok_or_else(|| ApiError(Error::invalid("file", "is required: send the spreadsheet in a multipart part named file")))
}
