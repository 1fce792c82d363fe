//! The payment use cases of one tenant's merchant account: its configuration and keys, JSAPI
//! orders, queries, closes and refunds, the pay platform's notifications and the daily
//! reconciliation against the trade bill.
//!
//! Records only move forward (see `lifecycle`): every write of a transaction or refund is a
//! conditional update against the state it was read in, retried after a lost race, so a
//! notification, a query and a close racing each other settle on the furthest state.
use super::plans::RatioCheck;
use crate::api::*;
use crate::config::PaymentSettings;
use crate::discrepancies::{DiscrepancyKind, DiscrepancyStatus, NewDiscrepancy};
use crate::model::*;
use crate::ports::{MerchantKeys, PayPlatform, PayPlatformError, PaymentRepo};
use crate::sharing::Rates;
use atrium_kernel::Reason;
use atrium_kernel::failpoint;
use atrium_kernel::secret::nonce;
use atrium_kernel::{
    Actor, AuditRecord, Clock, Error, FieldError, Id, JobStore, Money, NewJob, PaymentMethod, Result, Timestamp, china_day,
    china_standard_time,
};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// How often a conditional write is tried before giving up on a record that keeps changing.
const WRITE_ATTEMPTS: usize = 3;
/// Platform codes that say the order's state forbids the request: 409 rather than 400.
const CONFLICT_CODES: &[&str] = &["ORDERPAID", "ORDER_CLOSED", "ORDERCLOSED", "OUT_TRADE_NO_USED", "NOT_ENOUGH", "USERPAYING"];
/// The platform keeps trade bills this many days.
const BILL_DAYS: i64 = 90;

/// A pay platform failure as a domain error: a refusal (4xx) is a 409 (`Blocked`) when the
/// order's state forbids the request and a 400 otherwise, either way with the platform's
/// `code` in a field error on `pay_platform` (`data.errors`); 5xx and time-outs are 502
/// (`Upstream`). Never a 500.
pub fn platform_error(e: PayPlatformError) -> Error {
    match e {
        PayPlatformError::Refused { status, code, message }
            if matches!(status, 403 | 409 | 429) || CONFLICT_CODES.contains(&code.as_str()) =>
        {
            Error::blocked(Reason::PlatformState, "pay_platform", format!("{code}: {message}"))
        }
        PayPlatformError::Refused { code, message, .. } => {
            Error::Invalid(vec![FieldError::new("pay_platform", format!("{code}: {message}"))])
        }
        PayPlatformError::Unavailable(m) => Error::Upstream(format!("the pay platform is unavailable: {m}")),
        PayPlatformError::Credentials(m) => {
            Error::Conflict(Reason::PaymentsNotReady, format!("the payment configuration cannot be used: {m}"))
        }
    }
}

/// The ledger's use cases over its ports: the merchant configuration, transactions and
/// refunds (its own routes' and orders'), notifications, reconciliation and the jobs that settle
/// what the platform has not told us yet.
pub struct PaymentService {
    pub(super) repo: Arc<dyn PaymentRepo>,
    pub(super) platform: Arc<dyn PayPlatform>,
    keys: Arc<dyn MerchantKeys>,
    pub(super) jobs: Arc<dyn JobStore>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) settings: PaymentSettings,
    pub(super) added: super::sharing::AddedReceivers,
}

impl PaymentService {
    /// A service over its storage, the pay platform, key inspection, the job queue, a clock and
    /// its settings.
    pub fn new(
        repo: Arc<dyn PaymentRepo>,
        platform: Arc<dyn PayPlatform>,
        keys: Arc<dyn MerchantKeys>,
        jobs: Arc<dyn JobStore>,
        clock: Arc<dyn Clock>,
        settings: PaymentSettings,
    ) -> Self {
        PaymentService { repo, platform, keys, jobs, clock, settings, added: Default::default() }
    }

    /// How many transactions hold a discrepancy now (for `/metrics`).
    pub async fn open_discrepancies(&self) -> Result<u64> {
        self.repo.open_discrepancies().await
    }

    /// The tenant the caller acts on: its own, or the one it names if in scope (404 if not).
    pub(super) async fn tenant(&self, actor: &Actor, requested: Option<Id>) -> Result<PaymentTenant> {
        let id = actor.party.tenant_for_new(requested)?;
        self.repo.tenant(actor.party, id).await?.ok_or_else(|| Error::no_such("tenant_id", "no such tenant"))
    }

    async fn config(&self, tenant_id: Id) -> Result<PaymentConfig> {
        self.repo.get_config(tenant_id).await?.ok_or(Error::NotFound("payment configuration"))
    }

    /// The account new payments of the tenant are placed with, in its current mode; 409 when
    /// the configuration is incomplete, or missing or disabled and `enabled` is required (new
    /// orders need it; settling existing ones does not). A new payment of a tenant without a
    /// configuration is refused for the tenant's state, as one with a disabled configuration
    /// is — not a 404, which would say the order or transaction being paid is not there.
    /// Without `enabled` it stays a 404 (a job of a configuration removed since ends on it).
    /// A sub-merchant's account is the platform's service provider acting for it.
    pub(super) async fn account(&self, tenant_id: Id, enabled: bool) -> Result<MerchantAccount> {
        Ok(self.current(tenant_id, enabled).await?.1)
    }

    /// [`account`](Self::account), with the configuration it was made from.
    async fn current(&self, tenant_id: Id, enabled: bool) -> Result<(PaymentConfig, MerchantAccount)> {
        let config = match self.repo.get_config(tenant_id).await? {
            Some(config) => config,
            None if enabled => return Err(Error::conflict(Reason::PaymentsNotReady, "payments are not configured for this tenant")),
            None => return Err(Error::NotFound("payment configuration")),
        };
        if enabled && !config.enabled {
            return Err(Error::conflict(Reason::PaymentsNotReady, "payments are disabled for this tenant"));
        }
        let merchant =
            match config.mode {
                PaymentMode::Direct => None,
                PaymentMode::SubMerchant => Some(config.sub_mchid.clone().ok_or_else(|| {
                    Error::conflict(Reason::PaymentsNotReady, "the payment configuration is incomplete: sub_mchid missing")
                })?),
            };
        let account = self.account_with(&config, merchant.as_deref(), enabled).await?;
        Ok((config, account))
    }

    /// The account `tx` was placed with, whatever the tenant's mode now: the provider acting
    /// for the transaction's sub-merchant, or the tenant's own account.
    pub(super) async fn account_of(&self, tx: &Transaction) -> Result<MerchantAccount> {
        let config = match self.repo.get_config(tx.tenant_id).await? {
            Some(config) => config,
            // A sub-merchant's payment settles through the provider alone.
            None if tx.sub_mchid.is_some() => PaymentConfig::new(tx.tenant_id, String::new(), String::new(), tx.created_at),
            None => return Err(Error::NotFound("payment configuration")),
        };
        self.account_with(&config, tx.sub_mchid.as_deref(), false).await
    }

    /// The account of `config`'s tenant with sub-merchant `sub_mchid` (the platform's service
    /// provider acting for it), or with its own merchant account for `None`; 409 when that
    /// account is incomplete, or a provider that is disabled while `enabled` is required.
    pub(super) async fn account_with(&self, config: &PaymentConfig, sub_mchid: Option<&str>, enabled: bool) -> Result<MerchantAccount> {
        let Some(sub_mchid) = sub_mchid else {
            return config.account().ok_or_else(|| {
                let mut missing = vec![];
                missing.extend(config.mchid.is_empty().then_some("mchid"));
                missing.extend(config.appid.is_empty().then_some("appid"));
                missing.extend(config.credentials.missing_parts());
                let account = if config.mode == PaymentMode::Direct { "payment configuration" } else { "tenant's own merchant account" };
                Error::conflict(Reason::PaymentsNotReady, format!("the {account} is incomplete: {} missing", missing.join(", ")))
            });
        };
        let Some(provider) = self.repo.get_provider().await? else {
            return Err(Error::conflict(Reason::PaymentsNotReady, "the platform's service-provider account is not set up"));
        };
        if enabled && !provider.enabled {
            return Err(Error::conflict(Reason::PaymentsNotReady, "the platform's service-provider account is disabled"));
        }
        provider.account_for(config.sub_merchant(sub_mchid)).ok_or_else(|| {
            Error::conflict(
                Reason::PaymentsNotReady,
                format!("the platform's service-provider account is incomplete: {} missing", provider.missing_parts().join(", ")),
            )
        })
    }

    /// The account to go on with `tx` when the tenant's current account is `current`: that one
    /// when `tx` was placed with the same merchant (no second read), the other otherwise.
    pub(super) async fn account_for(&self, tx: &Transaction, current: &MerchantAccount) -> Result<MerchantAccount> {
        if tx.sub_mchid.as_deref() == current.sub_merchant.as_ref().map(|s| s.sub_mchid.as_str()) {
            Ok(current.clone())
        } else {
            self.account_of(tx).await
        }
    }

    fn view(&self, config: &PaymentConfig) -> PaymentConfigView {
        PaymentConfigView::new(config, self.settings.notify_url(config.tenant_id))
    }

    fn audit(
        &self,
        actor: &Actor,
        tenant: PaymentTenant,
        action: &str,
        before: Option<&PaymentConfig>,
        after: &PaymentConfig,
    ) -> AuditRecord {
        let as_json = |c: &PaymentConfig| serde_json::to_value(self.view(c)).ok();
        let before = before.and_then(as_json);
        AuditRecord::by(actor, self.clock.now(), action, "payment_config", Some(tenant.id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(before.as_ref(), as_json(after).as_ref())
    }

    /// `GET /miniprogram/payment/config`; 404 when the tenant has none yet.
    pub async fn get_config(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<PaymentConfigView> {
        let tenant = self.tenant(actor, tenant_id).await?;
        Ok(self.view(&self.config(tenant.id).await?))
    }

    /// `PUT /miniprogram/payment/config`: creates or updates the tenant's mode, its merchant
    /// ids (its own, or its sub-merchant's), the APIv3 key and the switch. Enabling needs every
    /// part of the mode's configuration; switching mode needs every payment and refund of the
    /// tenant final, and the platform's service provider set up to switch to sub-merchant.
    pub async fn put_config(&self, actor: &Actor, input: PaymentConfigPut) -> Result<PaymentConfigView> {
        let tenant = self.tenant(actor, input.tenant_id).await?;
        let now = self.clock.now();
        let before = self.repo.get_config(tenant.id).await?;
        let mut config = before.clone().unwrap_or_else(|| PaymentConfig::new(tenant.id, String::new(), String::new(), now));
        let mode = input.mode.unwrap_or(config.mode);
        let (required, unused) = match mode {
            PaymentMode::Direct => (
                vec![("mchid", input.mchid.is_some()), ("appid", input.appid.is_some())],
                vec![("sub_mchid", input.sub_mchid.is_some()), ("sub_appid", input.sub_appid.is_some())],
            ),
            PaymentMode::SubMerchant => (
                vec![("sub_mchid", input.sub_mchid.is_some())],
                vec![("mchid", input.mchid.is_some()), ("appid", input.appid.is_some()), ("api_v3_key", input.api_v3_key.is_some())],
            ),
        };
        let name: &str = mode.into();
        let errors: Vec<FieldError> = (required.into_iter().filter(|(_, given)| !given))
            .map(|(field, _)| FieldError::new(field, format!("is required in {name} mode")))
            .chain(
                unused
                    .into_iter()
                    .filter(|(_, given)| *given)
                    .map(|(field, _)| FieldError::new(field, format!("is not used in {name} mode"))),
            )
            .collect();
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        match mode {
            PaymentMode::Direct => {
                if let (Some(mchid), Some(appid)) = (input.mchid, input.appid) {
                    config.mchid = mchid.into_string();
                    config.appid = appid.into_string();
                }
                if let Some(key) = input.api_v3_key {
                    config.credentials.api_v3_key = Some(key.into_secret());
                }
            }
            PaymentMode::SubMerchant => {
                config.sub_mchid = input.sub_mchid.map(Mchid::into_string);
                config.sub_appid = input.sub_appid.map(Appid::into_string);
            }
        }
        let switching = before.as_ref().is_some_and(|b| b.mode != mode);
        config.mode = mode;
        let new_sub_merchant = before.as_ref().is_none_or(|b| b.mode != mode || b.sub_mchid != config.sub_mchid);
        if let (PaymentMode::SubMerchant, true, Some(sub_mchid)) = (mode, new_sub_merchant, &config.sub_mchid) {
            let provider = match self.repo.get_provider().await? {
                Some(p) if p.missing_parts().is_empty() => p,
                _ => {
                    return Err(Error::blocked(
                        Reason::PaymentsNotReady,
                        "mode",
                        "the platform's service-provider account is not set up: a tenant cannot collect as its sub-merchant yet",
                    ));
                }
            };
            // The sub-merchant must be the provider's, and allow what the tenant's payments
            // would be shared at.
            let plan = match tenant.partner_id {
                Some(partner_id) => self.repo.share_plan(partner_id).await?,
                None => None,
            };
            let total = Rates::of(plan.as_ref(), Some(&provider)).total();
            let sub = SubMerchant { sub_mchid: sub_mchid.clone(), sub_appid: config.sub_appid.clone() };
            self.check_max_ratio(Some(&provider), vec![RatioCheck { tenant_id: tenant.id, sub, total }], "sub_mchid").await?;
        }
        if let Some(enabled) = input.enabled {
            config.enabled = enabled;
        }
        if config.enabled {
            complete_to_enable("configuration", config.missing_parts())?;
        }
        config.updated_at = now;
        let action = match &before {
            None => "payment_config.create",
            Some(_) if switching => "payment_config.switch_mode",
            Some(_) => "payment_config.update",
        };
        let audit = self.audit(actor, tenant, action, before.as_ref(), &config);
        let stored = self.repo.put_config(config, Effects::audited(audit), switching).await?;
        Ok(self.view(&stored))
    }

    /// `POST /miniprogram/payment/cert/upload`: any of the merchant private key, the merchant
    /// certificate and the platform key of the tenant's own account. The key and the
    /// certificate must belong together, whether they arrive together or one after the other.
    pub async fn upload_keys(&self, actor: &Actor, upload: KeyUpload) -> Result<PaymentConfigView> {
        let tenant = self.tenant(actor, upload.tenant_id).await?;
        let before = self.config(tenant.id).await?;
        let mut config = before.clone();
        config.credentials = self.uploaded(&before.credentials, upload)?;
        config.updated_at = self.clock.now();
        let audit = self.audit(actor, tenant, "payment_config.upload_keys", Some(&before), &config);
        let stored = self.repo.put_config(config, Effects::audited(audit), false).await?;
        Ok(self.view(&stored))
    }

    /// `before` with the parts of `upload`, each inspected: one answer names every bad part.
    pub(super) fn uploaded(&self, before: &MerchantCredentials, upload: KeyUpload) -> Result<MerchantCredentials> {
        if upload.private_key.is_none() && upload.certificate.is_none() && upload.platform_public_key.is_none() {
            return Err(Error::BadRequest("send at least one of private_key, certificate and platform_public_key".into()));
        }
        let now = self.clock.now();
        let mut errors = Vec::new();
        let key = upload.private_key.as_ref().and_then(|pem| collect(self.keys.inspect_private_key(pem), &mut errors)).transpose()?;
        let cert =
            upload.certificate.as_deref().and_then(|pem| collect(self.keys.inspect_certificate(pem, now), &mut errors)).transpose()?;
        if let Some(c) = cert.as_ref().filter(|c| c.not_after <= now) {
            errors.push(FieldError::new("certificate", format!("expired on {}", c.not_after.to_rfc3339())));
        }
        let platform = match (&upload.platform_public_key, &upload.platform_public_key_id) {
            (Some(pem), Some(_)) => collect(self.keys.inspect_platform_key(pem), &mut errors).transpose()?,
            (Some(_), None) => {
                errors.push(FieldError::new("platform_public_key_id", "is required with platform_public_key"));
                None
            }
            (None, Some(_)) => {
                errors.push(FieldError::new("platform_public_key", "is required with platform_public_key_id"));
                None
            }
            (None, None) => None,
        };
        match (&key, &cert) {
            (Some(k), Some(c)) if k.fingerprint != c.key_fingerprint => {
                errors.push(FieldError::new("certificate", "does not belong to private_key"));
            }
            (Some(k), None) if before.merchant_serial_no.is_some() && before.merchant_key_fingerprint.as_ref() != Some(&k.fingerprint) => {
                errors.push(FieldError::new("private_key", "does not belong to the stored certificate; upload both together"));
            }
            (None, Some(c))
                if before.merchant_private_key.is_some() && before.merchant_key_fingerprint.as_ref() != Some(&c.key_fingerprint) =>
            {
                errors.push(FieldError::new("certificate", "does not belong to the stored private_key; upload both together"));
            }
            _ => {}
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }

        let mut after = before.clone();
        if let (Some(pem), Some(k)) = (upload.private_key, key) {
            after.merchant_private_key = Some(pem);
            after.merchant_key_fingerprint = Some(k.fingerprint);
        }
        if let Some(c) = cert {
            after.merchant_serial_no = Some(c.serial_no);
            after.merchant_cert_not_after = Some(c.not_after);
            after.merchant_key_fingerprint = Some(c.key_fingerprint);
        }
        if let (Some(pem), Some(id), Some(p)) = (upload.platform_public_key, upload.platform_public_key_id, platform) {
            after.platform_public_key = Some(pem);
            after.platform_public_key_id = Some(id.into_string());
            after.platform_key_fingerprint = Some(p.fingerprint);
        }
        Ok(after)
    }

    /// `POST /miniprogram/payment/test`: whether the configuration is complete, the key and
    /// certificate belong together, the certificate is valid, and the pay platform accepts a
    /// signed request and answers with a signature that verifies (a query of a made-up order
    /// must come back `ORDER_NOT_EXIST`). Failing checks are a report, not an error. A
    /// sub-merchant's test checks the provider's keys acting for it.
    pub async fn test(&self, actor: &Actor, tenant_id: Option<Id>) -> Result<TestReport> {
        let tenant = self.tenant(actor, tenant_id).await?;
        let Some(config) = self.repo.get_config(tenant.id).await? else {
            let checks = vec![TestCheck { name: "config_complete".into(), ok: false, detail: "no payment configuration yet".into() }];
            return Ok(TestReport { ok: false, checks });
        };
        if config.mode == PaymentMode::SubMerchant {
            let provider = self.repo.get_provider().await?;
            let sub = config.sub_mchid.as_deref().map(|s| config.sub_merchant(s));
            let Some(provider) = provider else {
                let checks = vec![TestCheck {
                    name: "config_complete".into(),
                    ok: false,
                    detail: "the platform's service-provider account is not set up".into(),
                }];
                return Ok(TestReport { ok: false, checks });
            };
            let missing: Vec<&str> = config.missing_parts().into_iter().chain(provider.missing_parts()).collect();
            let account = sub.and_then(|sub| provider.account_for(sub));
            return Ok(self.check_credentials(&provider.credentials, missing, account).await);
        }
        let account = config.account();
        Ok(self.check_credentials(&config.credentials, config.missing_parts(), account).await)
    }

    /// The checks of a payment test over one set of keys and the account they make.
    pub(super) async fn check_credentials(
        &self,
        credentials: &MerchantCredentials,
        missing: Vec<&str>,
        account: Option<MerchantAccount>,
    ) -> TestReport {
        let now = self.clock.now();
        let mut checks = Vec::new();
        let mut check = |name: &str, ok: bool, detail: String| checks.push(TestCheck { name: name.into(), ok, detail });
        check(
            "config_complete",
            missing.is_empty(),
            if missing.is_empty() { "complete".into() } else { format!("missing: {}", missing.join(", ")) },
        );

        match (&credentials.merchant_private_key, &credentials.merchant_key_fingerprint, &credentials.merchant_serial_no) {
            (Some(pem), Some(fingerprint), Some(serial)) => match self.keys.inspect_private_key(pem) {
                Ok(k) if &k.fingerprint == fingerprint => {
                    check("key_matches_certificate", true, format!("key matches certificate {serial}"))
                }
                Ok(_) => check("key_matches_certificate", false, format!("the private key does not belong to certificate {serial}")),
                Err(e) => check("key_matches_certificate", false, format!("the stored private key cannot be used: {e}")),
            },
            _ => check("key_matches_certificate", false, "private_key and certificate are both needed".into()),
        }
        match credentials.merchant_cert_not_after {
            Some(t) if t > now => check("certificate_not_expired", true, format!("valid until {}", t.to_rfc3339())),
            Some(t) => check("certificate_not_expired", false, format!("expired on {}", t.to_rfc3339())),
            None => check("certificate_not_expired", false, "no certificate uploaded".into()),
        }
        match account {
            None => check("platform_round_trip", false, "skipped: the configuration is incomplete".into()),
            Some(account) => {
                let probe = format!("ATRIUMTEST{}", nonce(12));
                match self.platform.query_order(&account, &probe).await {
                    Err(PayPlatformError::Refused { code, .. }) if code == "ORDER_NOT_EXIST" => {
                        check("platform_round_trip", true, "a signed request was accepted and the signed answer verified".into())
                    }
                    Err(e) => check("platform_round_trip", false, e.to_string()),
                    Ok(_) => check("platform_round_trip", false, format!("the made-up order {probe} unexpectedly exists")),
                }
            }
        }
        TestReport { ok: checks.iter().all(|c| c.ok), checks }
    }

    /// A notification as received: verified and decrypted by the platform adapter with the
    /// keys of an account the tenant collects with — its current mode's first, then the
    /// other mode's, since payments made before a switch still settle — then
    /// [`handle_event`](Self::handle_event). Any error means "not accepted, nothing changed"
    /// and is answered in the platform's failure format.
    pub async fn receive_notification(
        &self,
        tenant_id: Id,
        request: NotificationRequest,
    ) -> std::result::Result<NotifyOutcome, NotificationError> {
        let unavailable = |what: &str, e: Error| {
            log::error!("payment notification for tenant {tenant_id}: reading the {what} failed: {e}");
            NotificationError::Unavailable
        };
        let config = self.repo.get_config(tenant_id).await.map_err(|e| unavailable("configuration", e))?;
        let Some(config) = config else { return Err(NotificationError::NotConfigured) };
        let provider = match config.sub_mchid {
            Some(_) => self.repo.get_provider().await.map_err(|e| unavailable("service-provider account", e))?,
            None => None,
        };
        let as_sub = config.sub_mchid.as_deref().and_then(|s| provider.as_ref().and_then(|p| p.account_for(config.sub_merchant(s))));
        let accounts: Vec<MerchantAccount> = match config.mode {
            PaymentMode::SubMerchant => [as_sub, config.account()],
            PaymentMode::Direct => [config.account(), as_sub],
        }
        .into_iter()
        .flatten()
        .collect();
        let mut first_error = None;
        let now = self.clock.now();
        let event = accounts.iter().find_map(|account| match self.platform.open_notification(account, &request, now) {
            Ok(event) => Some(event),
            Err(e) => {
                first_error.get_or_insert(e);
                None
            }
        });
        let event = event.ok_or_else(|| {
            let e = first_error.unwrap_or(NotificationError::NotConfigured);
            log::warn!("payment notification for tenant {tenant_id} refused: {e}");
            e
        })?;
        self.handle_event(tenant_id, event).await.map_err(|e| {
            log::error!("payment notification for tenant {tenant_id} could not be processed: {e}");
            NotificationError::Unavailable
        })
    }

    /// A verified event: applied forward only, once per event id. Events for unknown
    /// transactions or refunds are acknowledged and logged.
    pub async fn handle_event(&self, tenant_id: Id, event: PayEvent) -> Result<NotifyOutcome> {
        if self.repo.notification_seen(tenant_id, event.id.clone()).await? {
            return Ok(NotifyOutcome::Duplicate);
        }
        let outcome = match &event.resource {
            EventResource::Transaction(report) => match self.repo.get_transaction(tenant_id, report.out_trade_no.clone()).await? {
                None => {
                    log::warn!("payment notification {} for unknown out_trade_no {} of tenant {tenant_id}", event.id, report.out_trade_no);
                    NotifyOutcome::Unknown
                }
                Some(tx) if tx.sub_mchid != report.sub_mchid => {
                    misrouted(tenant_id, &event.id, &report.out_trade_no, tx.sub_mchid.as_deref(), report.sub_mchid.as_deref());
                    NotifyOutcome::Unknown
                }
                Some(tx) => {
                    // A payment of another amount or currency is kept as a discrepancy, not paid.
                    let before = (tx.trade_state, tx.transaction_id.clone(), tx.discrepancy.clone());
                    let after = self.apply_transaction_report(tenant_id, report).await?;
                    if (after.trade_state, after.transaction_id, after.discrepancy) != before {
                        NotifyOutcome::Applied
                    } else {
                        NotifyOutcome::Stale
                    }
                }
            },
            EventResource::Refund(report) => match self.repo.get_refund(tenant_id, report.out_refund_no.clone()).await? {
                None => {
                    log::warn!("refund notification {} for unknown out_refund_no {} of tenant {tenant_id}", event.id, report.out_refund_no);
                    NotifyOutcome::Unknown
                }
                Some(refund) => {
                    // A report through the partner endpoints names its sub-merchant: it must be
                    // the one the refunded payment was placed with.
                    let ours = match &report.sub_mchid {
                        Some(_) => self.refund_merchant(&refund).await?,
                        None => None,
                    };
                    if ours != report.sub_mchid {
                        misrouted(tenant_id, &event.id, &report.out_refund_no, ours.as_deref(), report.sub_mchid.as_deref());
                        NotifyOutcome::Unknown
                    } else {
                        let before = refund.status;
                        let after = self.apply_refund_report(tenant_id, &report.out_refund_no, report).await?;
                        if after.status != before { NotifyOutcome::Applied } else { NotifyOutcome::Stale }
                    }
                }
            },
            EventResource::Share { out_order_no, .. } => {
                if self.share_notified(tenant_id, out_order_no).await? {
                    NotifyOutcome::Applied
                } else {
                    NotifyOutcome::Unknown
                }
            }
            EventResource::Other => NotifyOutcome::Ignored,
        };
        self.repo.record_notification(tenant_id, event.id, event.event_type, self.clock.now()).await?;
        Ok(outcome)
    }

    /// `GET /miniprogram/payment/reconciliation`: the day's trade bill (a past day within the
    /// last three months, China Standard Time) against the tenant's payments and refunds.
    pub async fn reconcile(&self, actor: &Actor, tenant_id: Option<Id>, date: BillDate) -> Result<ReconciliationView> {
        let tenant = self.tenant(actor, tenant_id).await?;
        self.compare(tenant.id, date).await
    }

    /// The comparison of [`reconcile`](Self::reconcile) for `tenant_id`.
    pub(super) async fn compare(&self, tenant_id: Id, date: BillDate) -> Result<ReconciliationView> {
        let today = self.clock.now().with_timezone(&china_standard_time()).date_naive();
        if date >= today {
            return Err(Error::invalid("date", "must be a past day"));
        }
        if date < today - chrono::Duration::days(BILL_DAYS) {
            return Err(Error::invalid("date", "the pay platform keeps trade bills for three months"));
        }
        let (config, current) = self.current(tenant_id, false).await?;
        let mut lines = self.platform.trade_bill(&current, date).await.map_err(platform_error)?;
        let (from, to) = china_day(date);
        let paid = self.repo.paid_between(tenant_id, from, to).await?;
        let refunded = self.repo.refunds_succeeded_between(tenant_id, from, to).await?;
        // Every merchant the day's money moved through has a bill of its own: a tenant that
        // ever collected as a sub-merchant may have paid or refunded through the other mode's
        // account that day (payments made before a switch settle where they were made).
        if config.sub_mchid.is_some() {
            let mut merchants = vec![current.sub_merchant.as_ref().map(|s| s.sub_mchid.clone())];
            let mut numbers: Vec<String> = refunded.iter().map(|r| r.out_trade_no.clone()).collect();
            numbers.retain(|no| !paid.iter().any(|t| &t.out_trade_no == no));
            numbers.sort();
            numbers.dedup();
            let refunded_txs = if numbers.is_empty() { Vec::new() } else { self.repo.transactions_by_numbers(tenant_id, numbers).await? };
            for t in paid.iter().chain(&refunded_txs) {
                if t.method == PaymentMethod::WechatJsapi && !merchants.contains(&t.sub_mchid) {
                    merchants.push(t.sub_mchid.clone());
                }
            }
            for merchant in &merchants[1..] {
                let account = self.account_with(&config, merchant.as_deref(), false).await?;
                lines.extend(self.platform.trade_bill(&account, date).await.map_err(platform_error)?);
            }
        }

        let mut view = ReconciliationView {
            date,
            bill_lines: lines.len(),
            matched: 0,
            missing_locally: Vec::new(),
            missing_on_platform: Vec::new(),
            amount_mismatch: Vec::new(),
        };

        let payments: Vec<&BillLine> = lines.iter().filter(|l| l.trade_state == BillTradeState::Success).collect();
        let trade_nos: Vec<String> = payments.iter().map(|l| l.out_trade_no.clone()).collect();
        let local_txs: HashMap<String, Transaction> = if trade_nos.is_empty() {
            HashMap::new()
        } else {
            self.repo.transactions_by_numbers(tenant_id, trade_nos).await?.into_iter().map(|t| (t.out_trade_no.clone(), t)).collect()
        };
        for line in &payments {
            // A discrepancy is a payment we hold but never took as paid: a mismatch to resolve.
            match local_txs.get(&line.out_trade_no).filter(|t| t.trade_state.is_paid() || t.discrepancy.is_some()) {
                None => view.missing_locally.push(item(ReconciliationKind::Payment, &line.out_trade_no, None, line.amount)),
                Some(t) if t.amount != line.amount || t.discrepancy.is_some() => view.amount_mismatch.push(AmountMismatch {
                    kind: ReconciliationKind::Payment,
                    out_trade_no: line.out_trade_no.clone(),
                    out_refund_no: None,
                    platform_amount: line.amount,
                    local_amount: t.amount,
                }),
                Some(_) => view.matched += 1,
            }
        }
        let on_bill: HashSet<&str> = payments.iter().map(|l| l.out_trade_no.as_str()).collect();
        for t in paid {
            if !on_bill.contains(t.out_trade_no.as_str()) {
                view.missing_on_platform.push(item(ReconciliationKind::Payment, &t.out_trade_no, None, t.amount));
            }
        }

        let refunds: Vec<(&BillLine, &BillRefund)> = lines.iter().filter_map(|l| l.refund.as_ref().map(|r| (l, r))).collect();
        let refund_nos: Vec<String> = refunds.iter().map(|(_, r)| r.out_refund_no.clone()).collect();
        let local_refunds: HashMap<String, Refund> = if refund_nos.is_empty() {
            HashMap::new()
        } else {
            self.repo.refunds_by_numbers(tenant_id, refund_nos).await?.into_iter().map(|r| (r.out_refund_no.clone(), r)).collect()
        };
        for (line, r) in &refunds {
            match local_refunds.get(&r.out_refund_no) {
                None => view.missing_locally.push(item(ReconciliationKind::Refund, &line.out_trade_no, Some(&r.out_refund_no), r.amount)),
                Some(local) if local.amount != r.amount => view.amount_mismatch.push(AmountMismatch {
                    kind: ReconciliationKind::Refund,
                    out_trade_no: line.out_trade_no.clone(),
                    out_refund_no: Some(r.out_refund_no.clone()),
                    platform_amount: r.amount,
                    local_amount: local.amount,
                }),
                Some(_) => view.matched += 1,
            }
        }
        let refunds_on_bill: HashSet<&str> = refunds.iter().map(|(_, r)| r.out_refund_no.as_str()).collect();
        for r in refunded {
            if !refunds_on_bill.contains(r.out_refund_no.as_str()) {
                view.missing_on_platform.push(item(ReconciliationKind::Refund, &r.out_trade_no, Some(&r.out_refund_no), r.amount));
            }
        }
        Ok(view)
    }

    /// The sub-merchant `refund`'s transaction was placed with (`None`: the tenant's own account).
    async fn refund_merchant(&self, refund: &Refund) -> Result<Option<String>> {
        Ok(self.repo.get_transaction(refund.tenant_id, refund.out_trade_no.clone()).await?.and_then(|t| t.sub_mchid))
    }

    pub(super) async fn transaction(&self, tenant_id: Id, out_trade_no: &str) -> Result<Transaction> {
        self.repo.get_transaction(tenant_id, out_trade_no.to_owned()).await?.ok_or(Error::NotFound("payment transaction"))
    }

    /// Takes in a platform report about a transaction, forward only.
    pub(super) async fn apply_transaction_report(&self, tenant_id: Id, report: &PlatformTransaction) -> Result<Transaction> {
        let now = self.clock.now();
        self.save_transaction(tenant_id, &report.out_trade_no, |t| t.apply(report, now)).await
    }

    /// Reads the transaction, lets `change` edit it (returning whether it did) and writes it
    /// back conditionally on the state it was read in, with what follows from the change in
    /// the same database transaction (an event for the order it pays, a discrepancy's audit
    /// record); after a lost race, reads and tries again. Returns the transaction as stored.
    pub(super) async fn save_transaction(
        &self,
        tenant_id: Id,
        out_trade_no: &str,
        change: impl Fn(&mut Transaction) -> bool,
    ) -> Result<Transaction> {
        for _ in 0..WRITE_ATTEMPTS {
            let before = self.transaction(tenant_id, out_trade_no).await?;
            let mut tx = before.clone();
            if !change(&mut tx) {
                return Ok(tx);
            }
            tx.updated_at = self.clock.now();
            if let Some(paid_twice) = self.paid_another_way(&before, &tx).await? {
                if (&paid_twice.discrepancy, &paid_twice.transaction_id) == (&before.discrepancy, &before.transaction_id) {
                    return Ok(before);
                }
                tx = paid_twice;
            }
            let mut effects = Effects::default();
            let mut found = None;
            let moved = tx.trade_state != before.trade_state || tx.discrepancy != before.discrepancy;
            if moved {
                effects.jobs.extend(self.order_event(&tx));
                if !before.is_paid() {
                    effects.jobs.extend(self.share_job(&tx));
                }
            }
            if let (Some(why), None) = (&tx.discrepancy, &before.discrepancy) {
                log::error!("transaction {} of tenant {tenant_id}: discrepancy: {why}", tx.out_trade_no);
                let discrepancy = NewDiscrepancy::of_payment(&tx, why);
                effects.events.push(discrepancy.event(tx.order_id));
                found = Some(discrepancy);
                effects.audit = Some(
                    AuditRecord::system(tx.updated_at, "payment.discrepancy", "payment_transaction", Some(tx.id))
                        .owned_by(None, Some(tenant_id))
                        .with_after(serde_json::json!({ "out_trade_no": tx.out_trade_no, "order_id": tx.order_id, "discrepancy": why })),
                );
            }
            failpoint!("ledger.record");
            match self.repo.update_transaction(tx.clone(), before.trade_state, found, effects).await {
                Ok(true) => return Ok(tx),
                Ok(false) => {}
                // Its order got another live payment meanwhile: the next round sees it.
                Err(Error::Conflict(..)) if tx.order_id.is_some() && tx.trade_state != before.trade_state => {}
                Err(e) => return Err(e),
            }
        }
        Err(Error::conflict(Reason::TryAgain, "the transaction kept changing while it was being updated; try again"))
    }

    /// A closed platform payment of an order that the platform now reports paid, while the
    /// order was paid another way (offline) meanwhile: the money was taken twice. It is kept
    /// as a discrepancy on the closed transaction — recorded, audited, counted, for a person
    /// to refund one of them — not as a second live payment of the order.
    async fn paid_another_way(&self, before: &Transaction, after: &Transaction) -> Result<Option<Transaction>> {
        let Some(order_id) = after.order_id else { return Ok(None) };
        if !(before.trade_state.is_closed() && after.trade_state.is_paid()) {
            return Ok(None);
        }
        let other = self.repo.order_transaction(after.tenant_id, order_id).await?;
        let Some(other) = other.filter(|o| o.id != after.id && !o.trade_state.is_closed()) else { return Ok(None) };
        // Once a person resolved it (refunded or settled outside), a later report of the same
        // payment is not a new discrepancy: the transaction stays as it was left.
        let resolved = self.repo.discrepancies_of(after.id).await?;
        if resolved.iter().any(|d| d.kind == DiscrepancyKind::PaidTwice && d.status == DiscrepancyStatus::Resolved) {
            return Ok(Some(before.clone()));
        }
        Ok(Some(Transaction {
            discrepancy: Some(format!(
                "the pay platform reported {} fen paid for this closed payment of order {order_id}, which was paid another way ({}): \
                 the money was taken twice; refund one of them",
                after.amount.fen(),
                other.out_trade_no
            )),
            transaction_id: after.transaction_id.clone(),
            updated_at: after.updated_at,
            ..before.clone()
        }))
    }

    /// Takes in a platform report about a refund, forward only (same pattern as
    /// [`save_transaction`](Self::save_transaction)).
    pub(super) async fn apply_refund_report(&self, tenant_id: Id, out_refund_no: &str, report: &PlatformRefund) -> Result<Refund> {
        for _ in 0..WRITE_ATTEMPTS {
            let mut refund = self.repo.get_refund(tenant_id, out_refund_no.to_owned()).await?.ok_or(Error::NotFound("refund"))?;
            let read_status = refund.status;
            if !refund.apply(report, self.clock.now()) {
                return Ok(refund);
            }
            let mut effects = Effects::default();
            if refund.status != read_status {
                effects.jobs.extend(self.order_refund_event(&refund));
            }
            failpoint!("ledger.record");
            if self.repo.update_refund(refund.clone(), read_status, effects).await? {
                return Ok(refund);
            }
        }
        Err(Error::conflict(Reason::TryAgain, "the refund kept changing while it was being updated; try again"))
    }

    /// The event that tells orders the money of `tx`'s order changed, if it pays one.
    pub(super) fn order_event(&self, tx: &Transaction) -> Option<NewJob> {
        tx.order_id.map(|order_id| order_changed(tx.tenant_id, order_id, self.clock.now()))
    }

    /// The event that tells orders a refund of their money changed, if it refunds an order.
    pub(super) fn order_refund_event(&self, refund: &Refund) -> Option<NewJob> {
        refund.order_id.map(|order_id| order_changed(refund.tenant_id, order_id, self.clock.now()))
    }
}

/// An account is enabled only with every part: the stored configuration, not the request, is
/// short of them, so a 409 on `enabled` naming what is `missing`.
pub(super) fn complete_to_enable(what: &str, missing: Vec<&str>) -> Result<()> {
    if missing.is_empty() {
        return Ok(());
    }
    Err(Error::blocked(Reason::PaymentsNotReady, "enabled", format!("the {what} is incomplete: {} missing", missing.join(", "))))
}

/// Logs a notification about one of our numbers that came for another merchant than the one
/// the number was placed with: acknowledged, and nothing changes.
fn misrouted(tenant_id: Id, event_id: &str, number: &str, ours: Option<&str>, reported: Option<&str>) {
    let merchant = |m: Option<&str>| m.map_or_else(|| "the tenant's own merchant".to_owned(), |s| format!("sub-merchant {s}"));
    log::warn!(
        "payment notification {event_id} for {number} of tenant {tenant_id} names {}, but it was placed with {}: ignored",
        merchant(reported),
        merchant(ours)
    );
}

/// `ledger.order_changed`: the money of order `order_id` changed in the ledger. Written in
/// the same database transaction as the change; the server runs the orders' `sync` for it,
/// which reads what the ledger holds now (so events may repeat or overtake each other).
pub const ORDER_CHANGED: &str = "ledger.order_changed";

/// The payload of an [`ORDER_CHANGED`] event.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct OrderChanged {
    /// The order whose money changed.
    pub order_id: Id,
}

fn order_changed(tenant_id: Id, order_id: Id, now: Timestamp) -> NewJob {
    NewJob {
        kind: ORDER_CHANGED.into(),
        tenant_id: Some(tenant_id),
        payload: serde_json::json!({ "order_id": order_id }),
        run_at: now,
        // Never merged with a pending one: a run that already read the ledger would miss
        // this change.
        dedupe_key: None,
    }
}

fn item(kind: ReconciliationKind, out_trade_no: &str, out_refund_no: Option<&str>, amount: Money) -> ReconciliationItem {
    ReconciliationItem { kind, out_trade_no: out_trade_no.to_owned(), out_refund_no: out_refund_no.map(str::to_owned), amount }
}

/// Splits an inspection result: field errors are collected (so one answer names every bad
/// part), other errors pass through.
fn collect<T>(r: Result<T>, errors: &mut Vec<FieldError>) -> Option<Result<T>> {
    match r {
        Ok(v) => Some(Ok(v)),
        Err(Error::Invalid(fields)) => {
            errors.extend(fields);
            None
        }
        Err(e) => Some(Err(e)),
    }
}
