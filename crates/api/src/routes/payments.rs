//! `/api/v1/miniprogram/payment/*`: a tenant's merchant account on the pay platform, its
//! payment transactions and refunds, the platform's notifications and reconciliation.
//! Unified order and refund take an `Idempotency-Key`.
use crate::query::Query;
use actix_multipart::Multipart;
use actix_web::http::StatusCode;
use actix_web::{HttpRequest, HttpResponse, web};
use atrium_kernel::{Error, Id};
use atrium_payments::{
    CloseRequest, CloseView, DiscrepancyListParams, DiscrepancyQuery, DiscrepancyView, EarningsParams, EarningsView, KeyUpload,
    NotificationError, NotificationRequest, PaymentConfigPut, PaymentConfigView, PaymentTestRequest, PlatformKeyId, ProviderConfigPut,
    ProviderConfigView, QueryRequest, ReconciliationParams, ReconciliationView, RefundRequest, RefundView, ResolveRequest, Secret,
    ShareListParams, ShareQuery, ShareView, TestReport, TransactionView, UnifiedOrderRequest, UnifiedOrderView,
};
use futures_util::StreamExt;

use super::TenantParams;
use crate::app::AppState;
use crate::envelope::{ApiResult, ok};
use crate::error::ApiError;
use crate::extract::{Authorized, Json, JsonBody};
use crate::idempotency;
use crate::permission;
use atrium_kernel::permission as perm;

permission!(
    MiniprogramPayment = perm::MINIPROGRAM_PAYMENT,
    PaymentPay = perm::PAYMENT_PAY,
    PaymentQuery = perm::PAYMENT_QUERY,
    PaymentRefund = perm::PAYMENT_REFUND,
    PaymentClose = perm::PAYMENT_CLOSE
);

/// The largest part of a key upload: a PEM is a few kilobytes.
const MAX_PART_BYTES: usize = 64 * 1024;

pub fn configure(cfg: &mut web::ServiceConfig) {
    cfg.service(web::resource("/miniprogram/payment/config").route(web::get().to(get_config)).route(web::put().to(put_config)))
        .service(web::resource("/miniprogram/payment/cert/upload").route(web::post().to(upload_keys)))
        .service(web::resource("/miniprogram/payment/test").route(web::post().to(test)))
        .service(web::resource("/miniprogram/payment/unified-order").route(web::post().to(unified_order)))
        .service(web::resource("/miniprogram/payment/query").route(web::post().to(query)))
        .service(web::resource("/miniprogram/payment/refund").route(web::post().to(refund)))
        .service(web::resource("/miniprogram/payment/close").route(web::post().to(close)))
        .service(web::resource("/miniprogram/payment/reconciliation").route(web::get().to(reconciliation)))
        .service(web::resource("/miniprogram/payment/notify/{tenant_id}").route(web::post().to(notify)))
        .service(web::resource("/miniprogram/payment/shares").route(web::get().to(list_shares)))
        .service(web::resource("/miniprogram/payment/shares/{id}/retry").route(web::post().to(retry_share)))
        .service(web::resource("/miniprogram/payment/discrepancies").route(web::get().to(list_discrepancies)))
        .service(web::resource("/miniprogram/payment/discrepancies/{id}").route(web::get().to(get_discrepancy)))
        .service(web::resource("/miniprogram/payment/discrepancies/{id}/resolve").route(web::post().to(resolve_discrepancy)))
        .service(web::resource("/platform/pay-provider").route(web::get().to(get_provider)).route(web::put().to(put_provider)))
        .service(web::resource("/platform/earnings").route(web::get().to(platform_earnings)))
        .service(web::resource("/platform/pay-provider/cert/upload").route(web::post().to(upload_provider_keys)))
        .service(web::resource("/platform/pay-provider/test").route(web::post().to(test_provider)));
}

/// The tenant's payment configuration: ids, fingerprints, serials and dates, never a key.
#[utoipa::path(get, path = "/api/v1/miniprogram/payment/config", tag = "payments", params(TenantParams),
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = PaymentConfigView), (status = 404, description = "No configuration yet, or the tenant is not yours")))]
pub async fn get_config(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, q: Query<TenantParams>) -> ApiResult {
    ok(state.payments.get_config(&auth.actor, q.into_inner().tenant_id).await?)
}

/// Set the merchant id, app id, APIv3 key (write-only) and whether payments are enabled.
#[utoipa::path(put, path = "/api/v1/miniprogram/payment/config", tag = "payments", request_body = PaymentConfigPut,
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = PaymentConfigView),
        (status = 409, description = "Enabling an incomplete configuration; switching with money in flight; a sub-merchant the provider does not have, or whose max_ratio the tenant's shares exceed"),
        (status = 502, description = "The pay platform could not be asked for the sub-merchant's max_ratio")))]
pub async fn put_config(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, body: Json<PaymentConfigPut>) -> ApiResult {
    ok(state.payments.put_config(&auth.actor, body.0).await?)
}

/// Upload the merchant private key and certificate and the platform public key
/// (`multipart/form-data`; any part may come alone). A bad part is a 400 naming it.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/cert/upload", tag = "payments",
    request_body(content = atrium_payments::KeyUploadForm, content_type = "multipart/form-data"),
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = PaymentConfigView), (status = 413)))]
pub async fn upload_keys(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, form: Multipart) -> ApiResult {
    let upload = read_key_upload(form).await?;
    ok(state.payments.upload_keys(&auth.actor, upload).await?)
}

/// Check the configuration: complete, key matching certificate, certificate valid, and a
/// signed query the pay platform accepts and answers verifiably. Failures are `ok: false`.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/test", tag = "payments", request_body = PaymentTestRequest,
    security(("bearer" = ["miniprogram:payment"])), responses((status = 200, body = TestReport)))]
pub async fn test(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, body: Json<PaymentTestRequest>) -> ApiResult {
    ok(state.payments.test(&auth.actor, body.0.tenant_id).await?)
}

/// Place a JSAPI order with the pay platform; answers what the mini-program passes to
/// `wx.requestPayment`. Takes an `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/unified-order", tag = "payments", request_body = UnifiedOrderRequest,
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[ -~]+$",
        description = "1–255 printable ASCII characters; a retry with the same key and body gets the first answer")),
    security(("bearer" = ["payment:pay"])),
    responses((status = 200, body = UnifiedOrderView), (status = 409, description = "The number is paid, closed, used for other details, or an order's"), (status = 502, description = "The pay platform failed or its answer was lost: retry with the same Idempotency-Key")))]
pub async fn unified_order(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authorized<PaymentPay>,
    body: JsonBody<UnifiedOrderRequest>,
) -> HttpResponse {
    let JsonBody { value, bytes } = body;
    idempotency::once(&state, &req, &auth.actor, &bytes, async |key| {
        ok(state.payments.unified_order(&auth.actor, value, key.as_ref()).await?)
    })
    .await
}

/// Ask the pay platform for a transaction's state, and save it.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/query", tag = "payments", request_body = QueryRequest,
    security(("bearer" = ["payment:query"])), responses((status = 200, body = TransactionView), (status = 502)))]
pub async fn query(state: web::Data<AppState>, auth: Authorized<PaymentQuery>, body: Json<QueryRequest>) -> ApiResult {
    ok(state.payments.query(&auth.actor, body.0).await?)
}

/// Refund part or all of a paid transaction; `processing` until the platform settles it.
/// Takes an `Idempotency-Key`.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/refund", tag = "payments", request_body = RefundRequest,
    params(("Idempotency-Key" = Option<String>, Header, min_length = 1, max_length = 255, pattern = "^[ -~]+$",
        description = "1–255 printable ASCII characters; a retry with the same key and body gets the first answer")),
    security(("bearer" = ["payment:refund"])),
    responses((status = 200, body = RefundView), (status = 409, description = "Not paid, more than is left to refund, too many refunds, a year after the payment, or an order's transaction (refunded through the order)"), (status = 502, description = "The pay platform failed or its answer was lost: retry with the same Idempotency-Key")))]
pub async fn refund(
    req: HttpRequest,
    state: web::Data<AppState>,
    auth: Authorized<PaymentRefund>,
    body: JsonBody<RefundRequest>,
) -> HttpResponse {
    let JsonBody { value, bytes } = body;
    idempotency::once(&state, &req, &auth.actor, &bytes, async |key| ok(state.payments.refund(&auth.actor, value, key.as_ref()).await?))
        .await
}

/// Close an unpaid transaction; a paid one is a 409.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/close", tag = "payments", request_body = CloseRequest,
    security(("bearer" = ["payment:close"])), responses((status = 200, body = CloseView), (status = 409, description = "Paid (refund it instead), or an order's transaction (closed through the order)"), (status = 502)))]
pub async fn close(state: web::Data<AppState>, auth: Authorized<PaymentClose>, body: Json<CloseRequest>) -> ApiResult {
    ok(state.payments.close(&auth.actor, body.0).await?)
}

/// Compare a day's trade bill from the pay platform with the tenant's records.
#[utoipa::path(get, path = "/api/v1/miniprogram/payment/reconciliation", tag = "payments", params(ReconciliationParams),
    security(("bearer" = ["payment:query"])),
    responses((status = 200, body = ReconciliationView), (status = 404, description = "No payment configuration, or the tenant is not yours"), (status = 502)))]
pub async fn reconciliation(state: web::Data<AppState>, auth: Authorized<PaymentQuery>, q: Query<ReconciliationParams>) -> ApiResult {
    let q = q.into_inner();
    ok(state.payments.reconcile(&auth.actor, q.tenant_id, q.date).await?)
}

/// The platform's statement: its share of the sub-merchant payments that succeeded from
/// `from` to `to` (China Standard Time days, inclusive), by day or by tenant, each payment as it
/// stands now (paid, refunded, and the platform's share shared, returned before refunds,
/// pending and failed; `net` = shared − returned). Platform users only.
#[utoipa::path(get, path = "/api/v1/platform/earnings", tag = "payments", params(EarningsParams),
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = EarningsView), (status = 400, description = "A missing or malformed day, `to` before `from`, or more than 366 days"),
        (status = 403, description = "Not a platform user")))]
pub async fn platform_earnings(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, q: Query<EarningsParams>) -> ApiResult {
    ok(state.payments.platform_earnings(&auth.actor, q.into_inner()).await?)
}

/// List profit-sharing shares of sub-merchant payments (one per receiver and transaction),
/// newest first: the platform's, a partner's tenants', or the tenant's own.
#[utoipa::path(get, path = "/api/v1/miniprogram/payment/shares", tag = "payments", params(ShareListParams),
    security(("bearer" = ["payment:query"])), responses((status = 200, body = inline(atrium_kernel::Page<ShareView>)), (status = 400)))]
pub async fn list_shares(state: web::Data<AppState>, auth: Authorized<PaymentQuery>, q: Query<ShareListParams>) -> ApiResult {
    let query = ShareQuery::try_from(q.into_inner())?;
    ok(state.payments.list_shares(&auth.actor, query).await?)
}

/// Request a `closed` share again (after its receiver was fixed), under a new `out_order_no`.
/// No body; the sharing job sends it at once.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/shares/{id}/retry", tag = "payments",
    params(("id" = i64, Path, minimum = 1)), security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = ShareView), (status = 404, description = "No such share, or not yours"),
        (status = 409, description = "The share is not closed, or it changed meanwhile")))]
pub async fn retry_share(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, id: web::Path<Id>) -> ApiResult {
    ok(state.payments.retry_share(&auth.actor, id.into_inner()).await?)
}

/// List where our books and the pay platform's differ (payments reported at another amount,
/// paid twice, shares and returns the platform holds otherwise), open and resolved, newest
/// first: the platform's, a partner's tenants', or the tenant's own.
#[utoipa::path(get, path = "/api/v1/miniprogram/payment/discrepancies", tag = "payments", params(DiscrepancyListParams),
    security(("bearer" = ["payment:query"])), responses((status = 200, body = inline(atrium_kernel::Page<DiscrepancyView>)), (status = 400)))]
pub async fn list_discrepancies(state: web::Data<AppState>, auth: Authorized<PaymentQuery>, q: Query<DiscrepancyListParams>) -> ApiResult {
    let query = DiscrepancyQuery::try_from(q.into_inner())?;
    ok(state.payments.list_discrepancies(&auth.actor, query).await?)
}

/// One discrepancy.
#[utoipa::path(get, path = "/api/v1/miniprogram/payment/discrepancies/{id}", tag = "payments",
    params(("id" = i64, Path, minimum = 1)), security(("bearer" = ["payment:query"])),
    responses((status = 200, body = DiscrepancyView), (status = 404, description = "No such discrepancy, or not yours")))]
pub async fn get_discrepancy(state: web::Data<AppState>, auth: Authorized<PaymentQuery>, id: web::Path<Id>) -> ApiResult {
    ok(state.payments.get_discrepancy(&auth.actor, id.into_inner()).await?)
}

/// Resolve an open discrepancy, audited: `refund_excess` refunds the payer what the platform
/// took beyond our record (the refund's number is in `out_refund_no`; it is sent at once and
/// settled like any refund); `accept` takes the platform's record into the books. What the
/// platform holds is asked afresh first. Platform users and the tenant's own.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/discrepancies/{id}/resolve", tag = "payments",
    request_body = ResolveRequest, params(("id" = i64, Path, minimum = 1)), security(("bearer" = ["payment:refund"])),
    responses((status = 200, body = DiscrepancyView), (status = 400, description = "Unknown action, or no note"),
        (status = 403, description = "A partner user"), (status = 404, description = "No such discrepancy, or not yours"),
        (status = 409, description = "Resolved already; the action does not fit what the platform holds; or it kept changing"),
        (status = 502, description = "The pay platform could not be asked; nothing was resolved")))]
pub async fn resolve_discrepancy(
    state: web::Data<AppState>,
    auth: Authorized<PaymentRefund>,
    id: web::Path<Id>,
    body: Json<ResolveRequest>,
) -> ApiResult {
    ok(state.payments.resolve_discrepancy(&auth.actor, id.into_inner(), body.0).await?)
}

/// The pay platform's notifications for a tenant (no token: the signature is the proof).
/// 204 when accepted; otherwise `{"code": "FAIL", "message"}` and nothing changes.
#[utoipa::path(post, path = "/api/v1/miniprogram/payment/notify/{tenant_id}", tag = "payments",
    params(("tenant_id" = i64, Path, minimum = 1),
           ("Wechatpay-Timestamp" = String, Header, description = "Unix seconds; 300 s or more away is refused"),
           ("Wechatpay-Nonce" = String, Header),
           ("Wechatpay-Signature" = String, Header, description = "Base64 SHA256withRSA over `timestamp\\nnonce\\nbody\\n`"),
           ("Wechatpay-Serial" = String, Header, description = "The platform key's id, `PUB_KEY_ID_…`")),
    request_body(content = Object, content_type = "application/json"),
    responses((status = 204, description = "Accepted"),
              (status = 400, body = atrium_payments::NotifyFailure, description = "Signed, but not the expected JSON or undecryptable"),
              (status = 401, body = atrium_payments::NotifyFailure, description = "Unsigned (a Wechatpay header missing), or the signature does not verify"),
              (status = 404, body = atrium_payments::NotifyFailure, description = "Payments are not configured for this tenant"),
              (status = 503, body = atrium_payments::NotifyFailure, description = "Not processed now; the platform retries")))]
pub async fn notify(req: HttpRequest, state: web::Data<AppState>, tenant_id: web::Path<String>, body: web::Bytes) -> HttpResponse {
    // Parsed here rather than by the path extractor, so even this refusal is in the
    // platform's format.
    let Ok(tenant_id) = tenant_id.parse::<Id>() else {
        return HttpResponse::NotFound().json(atrium_payments::NotifyFailure::new("no such tenant"));
    };
    let header = |name: &str| req.headers().get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let request = NotificationRequest {
        timestamp: header("wechatpay-timestamp"),
        nonce: header("wechatpay-nonce"),
        signature: header("wechatpay-signature"),
        serial: header("wechatpay-serial"),
        body: body.to_vec(),
    };
    match state.payments.receive_notification(tenant_id, request).await {
        Ok(_) => HttpResponse::NoContent().finish(),
        Err(e) => {
            let status = match e {
                NotificationError::NotJson | NotificationError::Undecryptable => StatusCode::BAD_REQUEST,
                // No signature is no credential: unauthenticated, as a missing token is.
                NotificationError::MissingHeaders
                | NotificationError::BadSignature
                | NotificationError::Probe
                | NotificationError::StaleTimestamp
                | NotificationError::UnknownSerial => StatusCode::UNAUTHORIZED,
                NotificationError::NotConfigured => StatusCode::NOT_FOUND,
                NotificationError::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            };
            HttpResponse::build(status).json(atrium_payments::NotifyFailure::new(e.to_string()))
        }
    }
}

/// The platform's service-provider account (platform users only): ids, rates, fingerprints,
/// serials and dates, never a key.
#[utoipa::path(get, path = "/api/v1/platform/pay-provider", tag = "payments",
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = ProviderConfigView), (status = 403, description = "Not a platform user"), (status = 404, description = "No service-provider account yet")))]
pub async fn get_provider(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>) -> ApiResult {
    ok(state.payments.get_provider(&auth.actor).await?)
}

/// Set the platform's service-provider account: its merchant and app ids, registered name,
/// APIv3 key (write-only), the platform's rate and the default partner commission (basis
/// points), and whether sub-merchants may take payments. Platform users only.
#[utoipa::path(put, path = "/api/v1/platform/pay-provider", tag = "payments", request_body = ProviderConfigPut,
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = ProviderConfigView), (status = 403, description = "Not a platform user"),
        (status = 409, description = "Enabling an incomplete account; a raised default over a sub-merchant's max_ratio"),
        (status = 502, description = "The pay platform could not be asked for a sub-merchant's max_ratio")))]
pub async fn put_provider(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, body: Json<ProviderConfigPut>) -> ApiResult {
    ok(state.payments.put_provider(&auth.actor, body.0).await?)
}

/// Upload the service provider's merchant private key and certificate and the platform public
/// key (`multipart/form-data`, the parts of a tenant's upload without `tenant_id`). A bad part
/// is a 400 naming it. Platform users only.
#[utoipa::path(post, path = "/api/v1/platform/pay-provider/cert/upload", tag = "payments",
    request_body(content = atrium_payments::ProviderKeyUploadForm, content_type = "multipart/form-data"),
    security(("bearer" = ["miniprogram:payment"])),
    responses((status = 200, body = ProviderConfigView), (status = 403, description = "Not a platform user"), (status = 404, description = "No service-provider account yet: PUT it first"), (status = 413)))]
pub async fn upload_provider_keys(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>, form: Multipart) -> ApiResult {
    let upload = read_key_upload(form).await?;
    ok(state.payments.upload_provider_keys(&auth.actor, upload).await?)
}

/// Check the service-provider account as a tenant's is checked: complete, key matching
/// certificate, certificate valid, and a signed query the pay platform accepts and answers
/// verifiably. Failures are `ok: false`. Platform users only.
#[utoipa::path(post, path = "/api/v1/platform/pay-provider/test", tag = "payments",
    security(("bearer" = ["miniprogram:payment"])), responses((status = 200, body = TestReport), (status = 403, description = "Not a platform user")))]
pub async fn test_provider(state: web::Data<AppState>, auth: Authorized<MiniprogramPayment>) -> ApiResult {
    ok(state.payments.test_provider(&auth.actor).await?)
}

/// The parts of a key upload, each at most [`MAX_PART_BYTES`] of UTF-8 text; an unknown part
/// or a part sent twice is a 400 naming it.
async fn read_key_upload(mut form: Multipart) -> Result<KeyUpload, ApiError> {
    let mut upload = KeyUpload::default();
    while let Some(field) = form.next().await {
        let mut field = field.map_err(|e| ApiError::bad_request(format!("malformed multipart body: {e}")))?;
        let name = field.name().unwrap_or_default().to_owned();
        let mut bytes = Vec::new();
        while let Some(chunk) = field.next().await {
            let chunk = chunk.map_err(|e| ApiError::bad_request(format!("malformed multipart body: {e}")))?;
            if bytes.len() + chunk.len() > MAX_PART_BYTES {
                return Err(ApiError(Error::TooLarge(format!("{name}: larger than {MAX_PART_BYTES} bytes"))));
            }
            bytes.extend_from_slice(&chunk);
        }
        let text = String::from_utf8(bytes).map_err(|_| ApiError(Error::invalid(name.clone(), "must be text (PEM)")))?;
        let twice = || ApiError(Error::invalid(name.clone(), "is sent twice"));
        match name.as_str() {
            "tenant_id" => {
                let id = text.trim().parse::<Id>().map_err(|_| ApiError(Error::invalid("tenant_id", "must be an integer")))?;
                if upload.tenant_id.replace(id).is_some() {
                    return Err(twice());
                }
            }
            "private_key" => {
                if upload.private_key.replace(Secret::new(&text)).is_some() {
                    return Err(twice());
                }
            }
            "certificate" => {
                if upload.certificate.replace(text).is_some() {
                    return Err(twice());
                }
            }
            "platform_public_key" => {
                if upload.platform_public_key.replace(text).is_some() {
                    return Err(twice());
                }
            }
            "platform_public_key_id" => {
                let id = PlatformKeyId::parse(text.trim()).map_err(|m| ApiError(Error::invalid("platform_public_key_id", m)))?;
                if upload.platform_public_key_id.replace(id).is_some() {
                    return Err(twice());
                }
            }
            "" => return Err(ApiError::bad_request("a multipart part has no name")),
            other => return Err(ApiError(Error::invalid(other.to_owned(), "is not a part of this form"))),
        }
    }
    Ok(upload)
}
