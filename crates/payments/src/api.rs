//! What clients send and receive for payments: the configuration, the certificate upload, the
//! transaction requests and their views. Money is fen throughout; no view ever carries a key.
use crate::discrepancies::*;
use crate::earnings::*;
use crate::lifecycle::TradeState;
use crate::model::*;
use crate::sharing::*;
use atrium_kernel::RefundStatus;
pub use atrium_kernel::pay::{ShareReceiverView, ShareView};
use atrium_kernel::{ByteText, Id, Money, Openid, PayParams, PaymentMethod, Secret};
use chrono::NaiveDate;
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use std::fmt;

atrium_kernel::ascii_code!(
    /// Our transaction number: 6–32 of `[0-9A-Za-z_-]`, unique per tenant, never reused.
    OutTradeNo, 6, 32, "_-", "6 to 32 characters of [0-9A-Za-z_-]"
);
atrium_kernel::ascii_code!(
    /// Our refund number: 1–64 of `[0-9A-Za-z_-|*@]`; a retry of one refund reuses it.
    OutRefundNo, 1, 64, "_-|*@", "1 to 64 characters of [0-9A-Za-z_-|*@]"
);
atrium_kernel::ascii_code!(
    /// A merchant id (商户号).
    Mchid, 1, 32, "_-", "the merchant id on the pay platform"
);
atrium_kernel::ascii_code!(
    /// A mini-program's app id.
    Appid, 1, 32, "_-", "the mini-program's app id"
);
atrium_kernel::ascii_code!(
    /// The platform key's id: `PUB_KEY_ID_…`, or a platform certificate's serial.
    PlatformKeyId, 1, 64, "_-", "PUB_KEY_ID_… or a platform certificate serial"
);

/// An order's description: 1–127 bytes.
pub type Description = ByteText<127, false>;
/// Data returned untouched with the payment: up to 128 bytes.
pub type Attach = ByteText<128, true>;
/// A refund's reason, shown to the payer: up to 80 bytes.
pub type RefundReason = ByteText<80, true>;

/// The APIv3 key: exactly 32 printable ASCII characters. Write-only: `Debug` hides it and it
/// does not serialise.
#[derive(Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "String")]
pub struct ApiV3Key(Secret);

impl ApiV3Key {
    /// Checks a key as sent: exactly 32 printable ASCII characters; the error says so otherwise.
    pub fn parse(raw: &str) -> Result<Self, String> {
        if raw.len() != 32 || !raw.bytes().all(|b| b.is_ascii_graphic()) {
            return Err("must be exactly 32 printable ASCII characters".into());
        }
        Ok(ApiV3Key(Secret::new(raw)))
    }

    /// The key, to store (the store encrypts it).
    pub fn into_secret(self) -> Secret {
        self.0
    }
}

impl TryFrom<String> for ApiV3Key {
    type Error = String;
    fn try_from(s: String) -> Result<Self, String> {
        ApiV3Key::parse(&s)
    }
}

impl fmt::Debug for ApiV3Key {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiV3Key(***)")
    }
}

atrium_kernel::string_schemas!(
    ApiV3Key => atrium_kernel::schema::string_schema("32 printable ASCII characters; write-only", Some("^[!-~]{32}$"), None, None)
);

/// `PUT /miniprogram/payment/config`. In direct mode the body names the tenant's own account
/// (`mchid`, `appid`, `api_v3_key`); in sub-merchant mode its `sub_mchid` (and `sub_appid`)
/// under the platform's service provider. A field of the other mode is a 400.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "mchid": "1900000001", "appid": "wx8888888888888888", "api_v3_key": "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "enabled": true})))]
pub struct PaymentConfigPut {
    /// The tenant whose merchant account this acts on. Platform and partner callers must name
    /// it (400 without, 404 if out of their scope); a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// `direct` (the tenant's own merchant account) or `sub_merchant` (under the platform's
    /// service provider). Absent keeps the stored mode; a new configuration is direct.
    /// Switching is refused (409) while a payment or refund of the tenant is not final.
    pub mode: Option<PaymentMode>,
    /// Direct mode, required: the merchant id (商户号).
    pub mchid: Option<Mchid>,
    /// Direct mode, required: the mini-program the payments are made in.
    pub appid: Option<Appid>,
    /// Direct mode; write-only; absent keeps the stored key.
    pub api_v3_key: Option<ApiV3Key>,
    /// Sub-merchant mode, required: the sub-merchant id (特约商户号) under the platform's
    /// service provider; one tenant per sub-merchant.
    pub sub_mchid: Option<Mchid>,
    /// Sub-merchant mode, optional: the sub-merchant's own mini-program, when its payers pay
    /// in it; absent: they pay in the provider's.
    pub sub_appid: Option<Appid>,
    /// Absent keeps the stored setting (a new configuration starts disabled). Enabling needs
    /// a complete configuration.
    pub enabled: Option<bool>,
}

/// `POST /miniprogram/payment/cert/upload`, the parts of the multipart form. Any part may be
/// sent alone; `platform_public_key` needs `platform_public_key_id`.
#[derive(Clone, PartialEq, Eq, Default)]
pub struct KeyUpload {
    /// The tenant whose merchant account this acts on; required for platform and partner callers.
    pub tenant_id: Option<Id>,
    /// PEM, RSA ≥ 2048 bits, PKCS#8 or PKCS#1.
    pub private_key: Option<Secret>,
    /// PEM X.509 merchant certificate.
    pub certificate: Option<String>,
    /// PEM public key (or platform certificate).
    pub platform_public_key: Option<String>,
    /// `PUB_KEY_ID_…`, the id of `platform_public_key`.
    pub platform_public_key_id: Option<PlatformKeyId>,
}

impl fmt::Debug for KeyUpload {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("KeyUpload")
            .field("tenant_id", &self.tenant_id)
            .field("private_key", &self.private_key.as_ref().map(|_| "***"))
            .field("certificate", &self.certificate.as_ref().map(|_| "<pem>"))
            .field("platform_public_key", &self.platform_public_key.as_ref().map(|_| "<pem>"))
            .field("platform_public_key_id", &self.platform_public_key_id)
            .finish()
    }
}

/// `POST /miniprogram/payment/unified-order`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "description": "Coffee beans 500 g", "amount": 8800, "openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", "out_trade_no": "T20261123000001"})))]
pub struct UnifiedOrderRequest {
    /// The tenant whose merchant account this acts on. Platform and partner callers must name
    /// it (400 without, 404 if out of their scope); a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// 1–127 bytes.
    pub description: Description,
    /// Fen, at least 1.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 1, maximum = 1_000_000_000_000_i64))]
    pub amount: Money,
    /// The payer's openid in the tenant's mini-program.
    pub openid: Openid,
    /// Generated when absent.
    pub out_trade_no: Option<OutTradeNo>,
    /// Up to 128 bytes, returned with the payment.
    pub attach: Option<Attach>,
    /// RFC 3339; default two hours from now.
    pub time_expire: Option<DateTime<Utc>>,
}

/// `POST /miniprogram/payment/query`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "out_trade_no": "T20261123000001"})))]
pub struct QueryRequest {
    /// The tenant whose merchant account this acts on. Platform and partner callers must name
    /// it (400 without, 404 if out of their scope); a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The transaction to query, by our number.
    pub out_trade_no: OutTradeNo,
}

/// `POST /miniprogram/payment/close`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "out_trade_no": "T20261123000001"})))]
pub struct CloseRequest {
    /// The tenant whose merchant account this acts on. Platform and partner callers must name
    /// it (400 without, 404 if out of their scope); a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The unpaid transaction to close, by our number.
    pub out_trade_no: OutTradeNo,
}

/// `POST /miniprogram/payment/refund`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "out_trade_no": "T20261123000001", "amount": 3000, "reason": "Damaged in transit", "out_refund_no": "R20261123000001"})))]
pub struct RefundRequest {
    /// The tenant whose merchant account this acts on. Platform and partner callers must name
    /// it (400 without, 404 if out of their scope); a tenant caller may leave it out.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The paid transaction to refund, by our number.
    pub out_trade_no: OutTradeNo,
    /// Fen, at least 1, at most what is left to refund.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 1, maximum = 1_000_000_000_000_i64))]
    pub amount: Money,
    /// Up to 80 bytes, shown to the payer.
    pub reason: Option<RefundReason>,
    /// Generated when absent; send the same one to retry a refund.
    pub out_refund_no: Option<OutRefundNo>,
}

/// What the notify route answers when it does not accept a notification, in the pay
/// platform's own format (not the envelope): `{"code": "FAIL", "message"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct NotifyFailure {
    /// Always `FAIL`.
    pub code: &'static str,
    /// Why the notification was not accepted.
    pub message: String,
}

impl NotifyFailure {
    /// A failure answer saying `message`.
    pub fn new(message: impl Into<String>) -> Self {
        NotifyFailure { code: "FAIL", message: message.into() }
    }
}

/// `POST /miniprogram/payment/test`.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(example = json!({"tenant_id": 1})))]
#[serde(deny_unknown_fields)]
pub struct PaymentTestRequest {
    /// Required for platform and partner callers; a tenant caller's own tenant otherwise.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
}

/// The parts of `POST /miniprogram/payment/cert/upload` (`multipart/form-data`), as the
/// document shows them; each is text (a PEM, an id) and any may come alone.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(example = json!({"tenant_id": 1, "platform_public_key_id": "PUB_KEY_ID_0114232134912410000000000000000000"}))]
pub struct KeyUploadForm {
    /// Required for platform and partner callers.
    // A form part is text: never null, only absent.
    #[schema(value_type = i64, required = false, minimum = 1)]
    pub tenant_id: Option<Id>,
    /// The merchant private key, PEM (RSA ≥ 2048 bits, PKCS#8 or PKCS#1).
    pub private_key: Option<String>,
    /// The merchant certificate, PEM X.509; it must belong to the private key and be valid.
    pub certificate: Option<String>,
    /// The platform public key, PEM; needs `platform_public_key_id`.
    pub platform_public_key: Option<String>,
    /// `PUB_KEY_ID_…`.
    #[schema(value_type = Option<PlatformKeyId>)]
    pub platform_public_key_id: Option<String>,
}

/// The parts of `POST /platform/pay-provider/cert/upload` (`multipart/form-data`), as the
/// document shows them: a tenant's parts without `tenant_id`.
#[cfg(feature = "openapi")]
#[derive(utoipa::ToSchema)]
#[allow(dead_code)]
#[schema(example = json!({"platform_public_key_id": "PUB_KEY_ID_0114232134912410000000000000000000"}))]
pub struct ProviderKeyUploadForm {
    /// The provider's merchant private key, PEM (RSA ≥ 2048 bits, PKCS#8 or PKCS#1).
    pub private_key: Option<String>,
    /// The provider's merchant certificate, PEM X.509; it must belong to the private key and be
    /// valid.
    pub certificate: Option<String>,
    /// The platform public key, PEM; needs `platform_public_key_id`.
    pub platform_public_key: Option<String>,
    /// `PUB_KEY_ID_…`.
    #[schema(value_type = Option<PlatformKeyId>)]
    pub platform_public_key_id: Option<String>,
}

/// `GET /miniprogram/payment/reconciliation?date=YYYY-MM-DD`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ReconciliationParams {
    /// The tenant to reconcile; required for platform and partner callers.
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// The day of the trade bill (China Standard Time), `YYYY-MM-DD`.
    pub date: NaiveDate,
}

/// A merchant account's keys as shown: never a key, only fingerprints, serials and dates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CredentialsView {
    /// The merchant certificate's serial, upper-case hex; null until a certificate is uploaded.
    pub merchant_serial_no: Option<String>,
    /// SHA-256 of the merchant key's public half, hex; null until a key is uploaded.
    pub merchant_key_fingerprint: Option<String>,
    /// When the merchant certificate expires.
    pub merchant_cert_not_after: Option<DateTime<Utc>>,
    /// Whether the APIv3 key is stored (it is never shown).
    pub api_v3_key_set: bool,
    /// `PUB_KEY_ID_…` or the platform certificate's serial.
    pub platform_public_key_id: Option<String>,
    /// SHA-256 of the platform's public key, hex.
    pub platform_key_fingerprint: Option<String>,
}

impl From<&MerchantCredentials> for CredentialsView {
    fn from(c: &MerchantCredentials) -> Self {
        CredentialsView {
            merchant_serial_no: c.merchant_serial_no.clone(),
            merchant_key_fingerprint: c.merchant_key_fingerprint.clone(),
            merchant_cert_not_after: c.merchant_cert_not_after,
            api_v3_key_set: c.api_v3_key.is_some(),
            platform_public_key_id: c.platform_public_key_id.clone(),
            platform_key_fingerprint: c.platform_key_fingerprint.clone(),
        }
    }
}

/// A tenant's payment configuration as shown: never a key, only fingerprints, serials and
/// dates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaymentConfigView {
    /// The tenant whose merchant account this is.
    pub tenant_id: Id,
    /// How the tenant collects now.
    pub mode: PaymentMode,
    /// The merchant id (商户号) of the tenant's own account (direct mode).
    pub mchid: String,
    /// The mini-program the payments are made in (direct mode).
    pub appid: String,
    /// The sub-merchant id under the platform's service provider (sub-merchant mode).
    pub sub_mchid: Option<String>,
    /// The sub-merchant's own mini-program, when its payers pay in it.
    pub sub_appid: Option<String>,
    /// The keys of the tenant's own account (direct mode).
    #[serde(flatten)]
    pub credentials: CredentialsView,
    /// Where the pay platform sends this tenant's notifications.
    pub notify_url: String,
    /// Whether the tenant takes payments.
    pub enabled: bool,
    /// When the configuration last changed.
    pub updated_at: DateTime<Utc>,
}

impl PaymentConfigView {
    /// The view of `c`, with the tenant's notification address.
    pub fn new(c: &PaymentConfig, notify_url: String) -> Self {
        PaymentConfigView {
            tenant_id: c.tenant_id,
            mode: c.mode,
            mchid: c.mchid.clone(),
            appid: c.appid.clone(),
            sub_mchid: c.sub_mchid.clone(),
            sub_appid: c.sub_appid.clone(),
            credentials: (&c.credentials).into(),
            notify_url,
            enabled: c.enabled,
            updated_at: c.updated_at,
        }
    }
}

/// `PUT /platform/pay-provider`: the platform's service-provider account.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"sp_mchid": "1900000100", "sp_appid": "wx8888888888888888", "sp_name": "Atrium Platform Ltd", "api_v3_key": "a1B2c3D4e5F6g7H8i9J0k1L2m3N4o5P6", "platform_bp": 100, "default_commission_bp": 200, "enabled": true})))]
pub struct ProviderConfigPut {
    /// The provider's merchant id (服务商商户号).
    pub sp_mchid: Mchid,
    /// The provider's app id.
    pub sp_appid: Appid,
    /// The provider's registered merchant name (the platform requires it to add the provider
    /// as a profit-sharing receiver); absent keeps the stored one.
    pub sp_name: Option<MerchantName>,
    /// Write-only; absent keeps the stored key.
    pub api_v3_key: Option<ApiV3Key>,
    /// The platform's share of each sub-merchant payment, basis points 0–10,000; absent keeps
    /// the stored rate (0 for a new account).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000))]
    pub platform_bp: Option<i64>,
    /// A partner's commission when its share plan names none, basis points 0–10,000; absent
    /// keeps the stored rate (0 for a new account).
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000))]
    pub default_commission_bp: Option<i64>,
    /// Absent keeps the stored setting (a new account starts disabled). Enabling needs every
    /// key.
    pub enabled: Option<bool>,
}

/// A merchant's registered name: 1–128 characters of text.
pub type MerchantName = atrium_kernel::Text<128>;

/// The platform's service-provider account as shown: never a key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ProviderConfigView {
    /// The provider's merchant id.
    pub sp_mchid: String,
    /// The provider's app id.
    pub sp_appid: String,
    /// The provider's registered merchant name.
    pub sp_name: Option<String>,
    /// The provider's keys.
    #[serde(flatten)]
    pub credentials: CredentialsView,
    /// The platform's share of each sub-merchant payment, basis points.
    pub platform_bp: u32,
    /// A partner's commission when its share plan names none, basis points.
    pub default_commission_bp: u32,
    /// Whether sub-merchants take new payments.
    pub enabled: bool,
    /// When the account last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<&ProviderConfig> for ProviderConfigView {
    fn from(c: &ProviderConfig) -> Self {
        ProviderConfigView {
            sp_mchid: c.sp_mchid.clone(),
            sp_appid: c.sp_appid.clone(),
            sp_name: c.sp_name.clone(),
            credentials: (&c.credentials).into(),
            platform_bp: c.platform_bp,
            default_commission_bp: c.default_commission_bp,
            enabled: c.enabled,
            updated_at: c.updated_at,
        }
    }
}

atrium_kernel::ascii_code!(
    /// A profit-sharing receiver's account: a merchant id (`MERCHANT_ID`, digits) or an openid
    /// in the provider's app (`PERSONAL_OPENID`).
    ReceiverAccount, 1, 64, "_-", "a merchant id (MERCHANT_ID) or an openid in the provider's app (PERSONAL_OPENID)"
);

/// Who receives a partner's commission, as sent.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct ReceiverInput {
    /// `MERCHANT_ID` or `PERSONAL_OPENID`.
    #[serde(rename = "type")]
    pub kind: ReceiverType,
    /// The merchant id (digits), or the person's openid in the provider's app.
    pub account: ReceiverAccount,
    /// The merchant's registered name (required for `MERCHANT_ID`), or the person's real
    /// name (optional; the platform checks it against the openid when given).
    pub name: Option<MerchantName>,
}

/// `PUT /partners/{id}/share-plan`: a partner's share plan. Each call stores a new version;
/// an absent rate follows the provider's default, now and when the default changes.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"commission_bp": 500, "receiver": {"type": "MERCHANT_ID", "account": "1900000301", "name": "Harbour Agency Ltd"}})))]
pub struct SharePlanPut {
    /// The partner's commission of each payment of its sub-merchant tenants, basis points
    /// 0–10,000; absent: the provider's `default_commission_bp`.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000))]
    pub commission_bp: Option<i64>,
    /// The platform's share of those payments, basis points 0–10,000; absent: the provider's
    /// `platform_bp`.
    #[cfg_attr(feature = "openapi", schema(minimum = 0, maximum = 10_000))]
    pub platform_bp: Option<i64>,
    /// Where the commission goes.
    pub receiver: ReceiverInput,
}

/// A profit-sharing receiver as shown: the account masked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReceiverView {
    /// `MERCHANT_ID` or `PERSONAL_OPENID`.
    #[serde(rename = "type")]
    pub kind: ReceiverType,
    /// The account, its middle masked.
    pub account: String,
    /// The merchant's or person's name, if given.
    pub name: Option<String>,
}

impl From<&Receiver> for ReceiverView {
    fn from(r: &Receiver) -> Self {
        ReceiverView { kind: r.kind, account: r.masked_account(), name: r.name.clone() }
    }
}

/// A partner's current share plan, with the rates in force.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SharePlanView {
    /// The partner.
    pub partner_id: Id,
    /// The partner's commission now, basis points.
    pub commission_bp: u32,
    /// The platform's share of the partner's tenants' payments now, basis points.
    pub platform_bp: u32,
    /// Whether `commission_bp` is the provider's default (the plan names none).
    pub commission_bp_default: bool,
    /// Whether `platform_bp` is the provider's default (the plan names none).
    pub platform_bp_default: bool,
    /// Where the commission goes.
    pub receiver: ReceiverView,
    /// The plan's version: 1 for the first, one more for each change. Shares record it.
    pub version: i64,
    /// When this version was set.
    pub updated_at: DateTime<Utc>,
}

impl SharePlanView {
    /// `plan` with its rates as they are under `provider`.
    pub fn of(plan: &SharePlan, provider: Option<&ProviderConfig>) -> Self {
        let rates = Rates::of(Some(plan), provider);
        SharePlanView {
            partner_id: plan.partner_id,
            commission_bp: rates.commission_bp,
            platform_bp: rates.platform_bp,
            commission_bp_default: plan.commission_bp.is_none(),
            platform_bp_default: plan.platform_bp.is_none(),
            receiver: (&plan.receiver).into(),
            version: plan.version,
            updated_at: plan.created_at,
        }
    }
}

/// `GET /miniprogram/payment/shares` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct ShareListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Shares per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only this tenant's shares (platform and partner users).
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// Only shares of this partner's tenants.
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub partner_id: Option<Id>,
    /// Only shares in this status.
    pub status: Option<ShareStatus>,
    /// Only the shares of this transaction.
    #[cfg_attr(feature = "openapi", param(value_type = Option<OutTradeNo>))]
    pub out_trade_no: Option<OutTradeNo>,
    /// `true`: only shares holding a discrepancy with the pay platform's record; `false`:
    /// only those holding none.
    pub discrepancy: Option<bool>,
}

impl TryFrom<ShareListParams> for ShareQuery {
    type Error = atrium_kernel::Error;

    fn try_from(p: ShareListParams) -> Result<ShareQuery, atrium_kernel::Error> {
        let mut errors = Vec::new();
        for (field, id) in [("tenant_id", p.tenant_id), ("partner_id", p.partner_id)] {
            if id.is_some_and(|id| id < 1) {
                errors.push(atrium_kernel::FieldError::new(field, "must be at least 1"));
            }
        }
        if !errors.is_empty() {
            return Err(atrium_kernel::Error::Invalid(errors));
        }
        Ok(ShareQuery {
            page: atrium_kernel::PageRequest::new(p.page, p.page_size)?,
            tenant_id: p.tenant_id,
            partner_id: p.partner_id,
            status: p.status,
            out_trade_no: p.out_trade_no.map(OutTradeNo::into_string),
            discrepancy: p.discrepancy,
        })
    }
}

impl From<Share> for ShareView {
    fn from(s: Share) -> Self {
        ShareView {
            id: s.id,
            receiver: ShareReceiverView { kind: s.receiver.kind, account: s.receiver.masked_account() },
            out_trade_no: s.out_trade_no,
            tenant_id: s.tenant_id,
            partner_id: s.partner_id,
            role: s.role,
            amount: s.amount,
            returned: s.returned,
            withheld: s.withheld,
            status: s.status,
            fail_reason: s.fail_reason,
            out_order_no: s.out_order_no,
            plan_version: s.plan_version,
            created_at: s.created_at,
            settled_at: s.settled_at,
            discrepancy: s.discrepancy,
        }
    }
}

/// `GET /partners/{id}/earnings` and `GET /platform/earnings`: a statement of the paid
/// sub-merchant payments of `from`–`to`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct EarningsParams {
    /// The first day, `YYYY-MM-DD` (China Standard Time), inclusive.
    pub from: NaiveDate,
    /// The last day, `YYYY-MM-DD` (China Standard Time), inclusive; at most 366 days after
    /// `from`.
    pub to: NaiveDate,
    /// `day` (the default): a row per day a payment succeeded on; `tenant`: a row per tenant.
    #[serde(default)]
    pub group: EarningsGroup,
}

/// The sums of a statement row or of a whole statement, in fen, with what they leave the
/// earner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarningsSumsView {
    /// The sums.
    #[serde(flatten)]
    pub sums: EarningsSums,
    /// `shared − returned`: what the earner holds of these payments now.
    pub net: Money,
}

impl From<EarningsSums> for EarningsSumsView {
    fn from(sums: EarningsSums) -> Self {
        EarningsSumsView { net: sums.net(), sums }
    }
}

/// One row of a statement: a day's payments or a tenant's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarningsRowView {
    /// The day the payments succeeded on (China Standard Time); only when grouped by day.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub date: Option<NaiveDate>,
    /// The tenant whose payments these are; only when grouped by tenant.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tenant_id: Option<Id>,
    /// The sums.
    #[serde(flatten)]
    pub sums: EarningsSumsView,
}

/// A statement of what a partner (its commission) or the platform (its share) earned from the
/// sub-merchant payments that succeeded from `from` to `to`, each as it stands now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct EarningsView {
    /// The first day covered.
    pub from: NaiveDate,
    /// The last day covered.
    pub to: NaiveDate,
    /// `day` or `tenant`.
    pub group: EarningsGroup,
    /// Days ascending or tenants by id; only those with a paid payment.
    pub rows: Vec<EarningsRowView>,
    /// The sums of every row.
    pub totals: EarningsSumsView,
}

impl EarningsView {
    /// The view of `earnings` of `from`–`to` grouped by `group`.
    pub fn of(earnings: Earnings, from: NaiveDate, to: NaiveDate, group: EarningsGroup) -> Self {
        let rows = earnings
            .rows
            .into_iter()
            .map(|r| {
                let (date, tenant_id) = match r.key {
                    EarningsKey::Day(d) => (Some(d), None),
                    EarningsKey::Tenant(t) => (None, Some(t)),
                };
                EarningsRowView { date, tenant_id, sums: r.sums.into() }
            })
            .collect();
        EarningsView { from, to, group, rows, totals: earnings.totals.into() }
    }
}

/// The answer to a unified order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct UnifiedOrderView {
    /// Our number for the transaction (the one sent, or the one generated).
    pub out_trade_no: String,
    /// The pay platform's prepay id.
    pub prepay_id: String,
    /// What the mini-program passes to `wx.requestPayment`.
    pub pay_params: PayParams,
}

/// A transaction as last reported by the pay platform.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TransactionView {
    /// The tenant whose merchant account is paid.
    pub tenant_id: Id,
    /// Our number for the transaction.
    pub out_trade_no: String,
    /// The order this transaction pays; such a transaction is refunded and closed through
    /// its order (`/api/v1/orders/{id}/…`), not here.
    pub order_id: Option<Id>,
    /// `wechat_jsapi` (the pay platform) or `offline`.
    pub method: PaymentMethod,
    /// What is paid for, shown to the payer.
    pub description: String,
    /// Fen: what the payer is asked to pay.
    pub amount: Money,
    /// The payer's openid in the mini-program; empty for an offline payment.
    pub openid: String,
    /// Where the transaction stands at the pay platform.
    pub trade_state: TradeState,
    /// The pay platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    /// Fen: what the payer actually paid (less any platform coupons).
    pub payer_total: Option<Money>,
    /// When the payment succeeded.
    pub success_time: Option<DateTime<Utc>>,
    /// What the pay platform reported that does not match the transaction (another amount
    /// or currency): such a transaction is not paid. Null normally.
    pub discrepancy: Option<String>,
    /// After this the transaction can no longer be paid.
    pub expires_at: DateTime<Utc>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
    /// A sub-merchant's payment: how it is settled — each receiver's share (the platform's,
    /// the partner's commission) as it stands; the tenant keeps the rest. Empty for a direct
    /// payment and before the payment is shared.
    pub shares: Vec<ShareView>,
}

impl TransactionView {
    /// The view of `t` with its `shares`.
    pub fn with_shares(t: Transaction, shares: Vec<Share>) -> Self {
        TransactionView { shares: shares.into_iter().map(ShareView::from).collect(), ..t.into() }
    }
}

impl From<Transaction> for TransactionView {
    fn from(t: Transaction) -> Self {
        TransactionView {
            tenant_id: t.tenant_id,
            out_trade_no: t.out_trade_no,
            order_id: t.order_id,
            method: t.method,
            description: t.description,
            amount: t.amount,
            openid: t.openid,
            trade_state: t.trade_state,
            transaction_id: t.transaction_id,
            payer_total: t.payer_total,
            success_time: t.success_time,
            discrepancy: t.discrepancy,
            expires_at: t.expires_at,
            created_at: t.created_at,
            updated_at: t.updated_at,
            shares: Vec::new(),
        }
    }
}

/// A refund.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct RefundView {
    /// The transaction refunded.
    pub out_trade_no: String,
    /// The order whose payment is refunded, if any.
    pub order_id: Option<Id>,
    /// Our number for the refund.
    pub out_refund_no: String,
    /// The pay platform's refund id, once it accepted the refund.
    pub refund_id: Option<String>,
    /// `processing` until the pay platform settles it, then `succeeded`, `failed` or `closed`.
    pub status: RefundStatus,
    /// Fen: how much is refunded.
    pub amount: Money,
    /// The reason given, shown to the payer.
    pub reason: Option<String>,
    /// The user who asked for it; null when the system did.
    pub requested_by: Option<Id>,
    /// Why it failed, when known: the pay platform's reason a share of the payment could not
    /// be taken back first (the refund was then never sent).
    pub fail_reason: Option<String>,
    /// When the platform reported it succeeded.
    pub succeeded_at: Option<DateTime<Utc>>,
    /// When it was requested.
    pub created_at: DateTime<Utc>,
}

impl From<Refund> for RefundView {
    fn from(r: Refund) -> Self {
        RefundView {
            out_trade_no: r.out_trade_no,
            order_id: r.order_id,
            out_refund_no: r.out_refund_no,
            refund_id: r.refund_id,
            status: r.status,
            amount: r.amount,
            reason: r.reason,
            requested_by: r.requested_by,
            fail_reason: r.fail_reason,
            succeeded_at: r.succeeded_at,
            created_at: r.created_at,
        }
    }
}

/// The answer to a close.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct CloseView {
    /// The transaction closed.
    pub out_trade_no: String,
    /// Its state after the close (`CLOSED`, or what it was if it could not be closed).
    pub trade_state: TradeState,
}

/// `POST /miniprogram/payment/test`: each check with its outcome; `ok` when all passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TestReport {
    /// Whether every check passed.
    pub ok: bool,
    /// Each check, in the order run.
    pub checks: Vec<TestCheck>,
}

/// One check of a payment test.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct TestCheck {
    /// `config_complete`, `key_matches_certificate`, `certificate_not_expired`,
    /// `platform_round_trip`.
    pub name: String,
    /// Whether it passed.
    pub ok: bool,
    /// What was found, in English.
    pub detail: String,
}

/// What a reconciliation found: the day's trade bill against our transactions and refunds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReconciliationView {
    /// The day reconciled.
    pub date: NaiveDate,
    /// How many lines the day's trade bill has.
    pub bill_lines: usize,
    /// How many of them match our records exactly.
    pub matched: usize,
    /// On the bill, not here.
    pub missing_locally: Vec<ReconciliationItem>,
    /// Paid or refunded here that day, not on the bill.
    pub missing_on_platform: Vec<ReconciliationItem>,
    /// On both, with different amounts.
    pub amount_mismatch: Vec<AmountMismatch>,
}

/// Whether a reconciliation line is a payment or a refund.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, strum::IntoStaticStr)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
#[strum(serialize_all = "snake_case")]
pub enum ReconciliationKind {
    /// A payment (a transaction).
    Payment,
    /// A refund.
    Refund,
}

/// A payment or refund found on one side of a reconciliation only.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct ReconciliationItem {
    /// A payment or a refund.
    pub kind: ReconciliationKind,
    /// Our number for the transaction.
    pub out_trade_no: String,
    /// Our number for the refund, on a refund.
    pub out_refund_no: Option<String>,
    /// Fen.
    pub amount: Money,
}

/// A payment or refund on both sides of a reconciliation, with different amounts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct AmountMismatch {
    /// A payment or a refund.
    pub kind: ReconciliationKind,
    /// Our number for the transaction.
    pub out_trade_no: String,
    /// Our number for the refund, on a refund.
    pub out_refund_no: Option<String>,
    /// Fen: the amount on the trade bill.
    pub platform_amount: Money,
    /// Fen: the amount in our records.
    pub local_amount: Money,
}

/// What a notification did; every outcome is acknowledged (204).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NotifyOutcome {
    /// The record moved forward.
    Applied,
    /// The event id was seen before; nothing changed.
    Duplicate,
    /// The report was stale (it would move a record backwards) or said nothing new.
    Stale,
    /// No such transaction or refund here; logged.
    Unknown,
    /// An event type we do not act on.
    Ignored,
}

/// `GET /miniprogram/payment/discrepancies` parameters.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct DiscrepancyListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Discrepancies per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Only this tenant's (platform and partner users).
    #[cfg_attr(feature = "openapi", param(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// Only `open` or only `resolved` ones.
    pub status: Option<DiscrepancyStatus>,
    /// Only of this kind.
    pub kind: Option<DiscrepancyKind>,
    /// Only those of this transaction.
    #[cfg_attr(feature = "openapi", param(value_type = Option<OutTradeNo>))]
    pub out_trade_no: Option<OutTradeNo>,
}

impl TryFrom<DiscrepancyListParams> for DiscrepancyQuery {
    type Error = atrium_kernel::Error;

    fn try_from(p: DiscrepancyListParams) -> Result<DiscrepancyQuery, atrium_kernel::Error> {
        if p.tenant_id.is_some_and(|id| id < 1) {
            return Err(atrium_kernel::Error::invalid("tenant_id", "must be at least 1"));
        }
        Ok(DiscrepancyQuery {
            page: atrium_kernel::PageRequest::new(p.page, p.page_size)?,
            tenant_id: p.tenant_id,
            status: p.status,
            kind: p.kind,
            out_trade_no: p.out_trade_no.map(OutTradeNo::into_string),
        })
    }
}

/// The most characters of a resolution's note.
pub const MAX_NOTE_CHARS: usize = 500;

/// `POST /miniprogram/payment/discrepancies/{id}/resolve`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[cfg_attr(feature = "openapi", schema(example = json!({"action": "refund_excess", "note": "Payer charged 100.00 for a 99.00 order; ticket 4411"})))]
#[serde(deny_unknown_fields)]
pub struct ResolveRequest {
    /// `refund_excess`: refund the payer what the platform took beyond our record (a payment
    /// reported above its amount, or paid twice). `accept`: take the platform's record into the
    /// books.
    pub action: ResolveAction,
    /// Why, for the audit trail: 1–500 characters, not only spaces; no control characters
    /// but line breaks.
    #[cfg_attr(feature = "openapi", schema(min_length = 1, max_length = 500))]
    pub note: String,
}

impl ResolveRequest {
    /// The note, trimmed, if it is at most 500 characters, not blank, without control
    /// characters but line breaks.
    pub fn checked_note(&self) -> atrium_kernel::Result<String> {
        if self.note.chars().count() > MAX_NOTE_CHARS {
            return Err(atrium_kernel::Error::invalid("note", format!("must be at most {MAX_NOTE_CHARS} characters")));
        }
        if self.note.chars().any(|c| c.is_control() && c != '\n') {
            return Err(atrium_kernel::Error::invalid("note", "must not hold control characters other than line breaks"));
        }
        let note = self.note.trim();
        if note.is_empty() {
            return Err(atrium_kernel::Error::invalid("note", "must say why, not only spaces"));
        }
        Ok(note.to_owned())
    }
}

/// Where our books and the pay platform's differ, and how a person resolved it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct DiscrepancyView {
    /// Its id, for `resolve`.
    pub id: Id,
    /// The tenant whose payment it is.
    pub tenant_id: Id,
    /// `amount` (reported at another amount or currency), `paid_twice` (a closed payment
    /// reported paid while its order was paid another way), `share` or `return`.
    pub kind: DiscrepancyKind,
    /// The transaction.
    pub out_trade_no: String,
    /// The share it concerns (`share`, `return`).
    pub share_id: Option<Id>,
    /// The return it concerns (`return`).
    pub return_id: Option<Id>,
    /// What each side held when it was found.
    pub description: String,
    /// `open` or `resolved`.
    pub status: DiscrepancyStatus,
    /// How it was resolved.
    pub action: Option<ResolveAction>,
    /// Why, as whoever resolved it wrote.
    pub note: Option<String>,
    /// The user who resolved it.
    pub resolved_by: Option<Id>,
    /// The number of the refund of the excess (`refund_excess`).
    pub out_refund_no: Option<String>,
    /// That refund as it stands now.
    pub refund: Option<RefundView>,
    /// When it was found.
    pub created_at: DateTime<Utc>,
    /// When it was resolved.
    pub resolved_at: Option<DateTime<Utc>>,
}

impl From<Discrepancy> for DiscrepancyView {
    fn from(d: Discrepancy) -> Self {
        DiscrepancyView {
            id: d.id,
            tenant_id: d.tenant_id,
            kind: d.kind,
            out_trade_no: d.out_trade_no,
            share_id: d.share_id,
            return_id: d.return_id,
            description: d.description,
            status: d.status,
            action: d.action,
            note: d.note,
            resolved_by: d.resolved_by,
            out_refund_no: d.out_refund_no,
            refund: None,
            created_at: d.created_at,
            resolved_at: d.resolved_at,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_trade_no_is_6_to_32_of_the_allowed_characters() {
        assert!(OutTradeNo::parse("abc_-9").is_ok());
        assert!(OutTradeNo::parse(&"a".repeat(32)).is_ok());
        for bad in ["abcde", &"a".repeat(33), "abc*def", "订单号123456", "abc def"] {
            assert!(OutTradeNo::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn out_refund_no_allows_the_platform_extras_up_to_64() {
        assert!(OutRefundNo::parse("r|1*2@3_-").is_ok());
        assert!(OutRefundNo::parse(&"r".repeat(64)).is_ok());
        assert!(OutRefundNo::parse(&"r".repeat(65)).is_err());
        assert!(OutRefundNo::parse("").is_err());
        assert!(OutRefundNo::parse("r#1").is_err());
    }

    #[test]
    fn description_and_attach_count_bytes_not_characters() {
        // 42 three-byte characters = 126 bytes; one more is 129.
        assert!(Description::parse(&"支".repeat(42)).is_ok());
        assert!(Description::parse(&"支".repeat(43)).unwrap_err().contains("127 bytes"));
        assert!(Description::parse("").is_err());
        assert!(Description::parse("a\nb").is_err());
        assert!(Attach::parse("").is_ok());
        assert!(Attach::parse(&"a".repeat(128)).is_ok());
        assert!(Attach::parse(&"a".repeat(129)).is_err());
    }

    #[test]
    fn the_api_v3_key_is_32_printable_ascii_and_never_shown() {
        let key = ApiV3Key::parse("0123456789abcdefABCDEF!@#$%^&*()").unwrap();
        assert_eq!(format!("{key:?}"), "ApiV3Key(***)");
        assert_eq!(key.into_secret().expose(), "0123456789abcdefABCDEF!@#$%^&*()");
        for bad in ["short", &"a".repeat(33), &format!("{}é", "a".repeat(30)), &format!("{} ", "a".repeat(31))] {
            assert!(ApiV3Key::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_unified_order_body_is_parsed_into_checked_types() {
        let body = serde_json::json!({"description": "Coffee", "amount": 1, "openid": "o-1", "out_trade_no": "T2026_0001"});
        let req: UnifiedOrderRequest = serde_json::from_value(body).unwrap();
        assert_eq!(req.out_trade_no.map(OutTradeNo::into_string).as_deref(), Some("T2026_0001"));
        let bad = serde_json::json!({"description": "Coffee", "amount": 1, "openid": "o-1", "out_trade_no": "x"});
        assert!(serde_json::from_value::<UnifiedOrderRequest>(bad).is_err());
    }

    #[test]
    fn the_config_view_never_carries_a_key() {
        let now = chrono::DateTime::from_timestamp(1_700_000_000, 0).unwrap();
        let mut c = PaymentConfig::new(1, "1900000109".into(), "wx1".into(), now);
        c.credentials.merchant_private_key = Some(Secret::new("-----BEGIN PRIVATE KEY-----SECRET"));
        c.credentials.api_v3_key = Some(Secret::new("K".repeat(32)));
        let shown = serde_json::to_string(&PaymentConfigView::new(&c, "https://x/n/1".into())).unwrap();
        assert!(!shown.contains("SECRET") && !shown.contains(&"K".repeat(32)), "{shown}");
        assert!(shown.contains("\"api_v3_key_set\":true"));
        assert!(!format!("{c:?}").contains("SECRET"));
    }
}
