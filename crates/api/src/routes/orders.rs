//! `/api/v1/orders`: a tenant's orders, scoped to the caller's party, paid on the pay platform
//! (through the tenant's mini-program) or offline, and refunded. Create, pay and refund take
//! an `Idempotency-Key`.
use crate::query::Query;
use actix_web::{HttpRequest, HttpResponse, web};
use atrium_orders::{NewOrder, NewRefund, OrderListParams, OrderPayView, OrderQuery, OrderRefundView, OrderView, PayOrder};

use super::IdPath;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::extract::{Authorized, JsonBody};
use crate::idempotency;
use crate::permission;
use atrium_kernel::permission as perm;

permission!(OrderRead = perm::ORDER_READ, OrderCreate = perm::ORDER_CREATE, OrderPay = perm::ORDER_PAY, OrderRefund = perm::ORDER_REFUND);

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/orders").route(web::get().to(list)).route(web::post().to(create)))
        .service(web::resource("/orders/{id}").route(web::get().to(get)))
        .service(web::resource("/orders/{id}/pay").route(web::post().to(pay)))
        .service(web::resource("/orders/{id}/refund").route(web::post().to(refund)));
}

/// List orders.
#[utoipa::path(get, path = "/api/v1/orders", tag = "orders", params(OrderListParams), security(("bearer" = ["order:read"])),
    responses((status = 200, body = inline(atrium_kernel::Page<OrderView>)), (status = 401), (status = 403)))]
pub async fn list(state: web::Data<AppState>, auth: Authorized<OrderRead>, q: Query<OrderListParams>) -> ApiResult {
    let query = OrderQuery::try_from(q.into_inner())?;
    ok(state.orders.list(&auth.actor, query).await?)
}

/// Order detail, with its payment and refunds.
#[utoipa::path(get, path = "/api/v1/orders/{id}", tag = "orders", params(IdPath), security(("bearer" = ["order:read"])),
    responses((status = 200, body = OrderView), (status = 404)))]
pub async fn get(state: web::Data<AppState>, auth: Authorized<OrderRead>, id: web::Path<i64>) -> ApiResult {
    ok(state.orders.get(&auth.actor, id.into_inner()).await?)
}

/// Create an order (`pending`). With `items`, `amount` is their sum. Takes an
/// `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/orders", tag = "orders", request_body = NewOrder,
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[ -~]+$",
        description = "1–255 printable ASCII characters; a retry with the same key and body gets the first answer")),
    security(("bearer" = ["order:create"])),
    responses((status = 200, body = OrderView), (status = 400), (status = 409, description = "The key is in use by another request or body")))]
pub async fn create(req: HttpRequest, state: web::Data<AppState>, auth: Authorized<OrderCreate>, body: JsonBody<NewOrder>) -> HttpResponse {
    let JsonBody { value, bytes } = body;
    idempotency::once(&state, &req, &auth.actor, &bytes, async |_key| ok(state.orders.create(&auth.actor, value).await?)).await
}

/// Pay an order: `wechat_jsapi` answers what the mini-program passes to
/// `wx.requestPayment` (again the same while `paying`); `offline` marks it paid at once.
/// Takes an `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/orders/{id}/pay", tag = "orders", params(IdPath,
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[ -~]+$",
        description = "1–255 printable ASCII characters; a retry with the same key and body gets the first answer")),
    request_body = PayOrder, security(("bearer" = ["order:pay"])),
    responses((status = 200, body = OrderPayView), (status = 404), (status = 409, description = "The order's status does not allow paying, it expired, another payer or the other way of paying got there first, or it was paid on the platform meanwhile"),
        (status = 502, description = "The pay platform failed or its answer was lost: paying again resumes the same platform order")))]
pub async fn pay(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authorized<OrderPay>,
    id: web::Path<i64>,
    body: JsonBody<PayOrder>,
) -> HttpResponse {
    let JsonBody { value, bytes } = body;
    let id = id.into_inner();
    idempotency::once(&state, &req, &auth.actor, &bytes, async |_key| ok(state.orders.pay(&auth.actor, id, value).await?)).await
}

/// Refund part or all of a paid order; `processing` until the platform settles it (at once
/// for an order paid offline). Takes an `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/orders/{id}/refund", tag = "orders", params(IdPath,
        ("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[ -~]+$",
        description = "1–255 printable ASCII characters; a retry with the same key and body gets the first answer")),
    request_body = NewRefund, security(("bearer" = ["order:refund"])),
    responses((status = 200, body = OrderRefundView), (status = 404),
        (status = 409, description = "Not paid, more than is left to refund, 50 refunds already, or a year after payment"),
        (status = 502, description = "The pay platform failed or its answer was lost: retry with the same Idempotency-Key for the same refund")))]
pub async fn refund(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authorized<OrderRefund>,
    id: web::Path<i64>,
    body: JsonBody<NewRefund>,
) -> HttpResponse {
    let JsonBody { value, bytes } = body;
    let id = id.into_inner();
    idempotency::once(&state, &req, &auth.actor, &bytes, async |key| ok(state.orders.refund(&auth.actor, id, value, key).await?)).await
}
