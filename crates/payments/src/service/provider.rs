//! The platform's service-provider account (服务商): the merchant account tenants in
//! sub-merchant mode collect under. Only platform users with `miniprogram:payment` see or
//! change it; its keys are inspected, stored and tested exactly as a tenant's own.
use super::payments::{PaymentService, complete_to_enable};
use super::plans::{RatioCheck, basis_points};
use crate::api::*;
use crate::model::*;
use crate::sharing::Rates;
use atrium_kernel::{Actor, AuditRecord, Error, Party, Reason, Result};

impl PaymentService {
    /// Platform users only: a partner or a tenant never sees the provider's account.
    fn platform_only(actor: &Actor) -> Result<()> {
        match actor.party {
            Party::Platform => Ok(()),
            _ => Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users manage the platform's service-provider account")),
        }
    }

    fn provider_audit(&self, actor: &Actor, action: &str, before: Option<&ProviderConfig>, after: &ProviderConfig) -> AuditRecord {
        let as_json = |c: &ProviderConfig| serde_json::to_value(ProviderConfigView::from(c)).ok();
        let before = before.and_then(as_json);
        AuditRecord::by(actor, self.clock.now(), action, "pay_provider", None).change(before.as_ref(), as_json(after).as_ref())
    }

    /// `GET /platform/pay-provider`; 404 before one is saved.
    pub async fn get_provider(&self, actor: &Actor) -> Result<ProviderConfigView> {
        Self::platform_only(actor)?;
        let provider = self.repo.get_provider().await?.ok_or(Error::NotFound("service-provider account"))?;
        Ok((&provider).into())
    }

    /// `PUT /platform/pay-provider`: the provider's ids, name, APIv3 key, the platform's rate
    /// and the default commission, and the switch. Enabling needs every key.
    pub async fn put_provider(&self, actor: &Actor, input: ProviderConfigPut) -> Result<ProviderConfigView> {
        Self::platform_only(actor)?;
        let mut errors = Vec::new();
        let platform_bp = basis_points("platform_bp", input.platform_bp, &mut errors);
        let default_commission_bp = basis_points("default_commission_bp", input.default_commission_bp, &mut errors);
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        let now = self.clock.now();
        let before = self.repo.get_provider().await?;
        let mut config = before.clone().unwrap_or_else(|| ProviderConfig::new(String::new(), String::new(), now));
        config.sp_mchid = input.sp_mchid.into_string();
        config.sp_appid = input.sp_appid.into_string();
        if let Some(name) = input.sp_name {
            config.sp_name = Some(name.into_string());
        }
        if let Some(key) = input.api_v3_key {
            config.credentials.api_v3_key = Some(key.into_secret());
        }
        if let Some(bp) = platform_bp {
            config.platform_bp = bp;
        }
        if let Some(bp) = default_commission_bp {
            config.default_commission_bp = bp;
        }
        if let Some(enabled) = input.enabled {
            config.enabled = enabled;
        }
        if config.enabled {
            complete_to_enable("service-provider account", config.missing_parts())?;
        }
        if let Some(old) = before.as_ref().filter(|b| b.sp_mchid != config.sp_mchid) {
            // Its sub-merchants are the old provider's on the pay platform: their payments are
            // settled and shared through it.
            let moved = self.repo.sub_merchant_tenants(None).await?.len();
            if moved > 0 {
                return Err(Error::conflict(
                    Reason::State,
                    format!(
                        "{moved} tenants collect as sub-merchants of provider {}; move them to direct mode before changing sp_mchid",
                        old.sp_mchid
                    ),
                ));
            }
        }
        if let Some(before) =
            before.as_ref().filter(|b| config.platform_bp > b.platform_bp || config.default_commission_bp > b.default_commission_bp)
        {
            self.check_raised_defaults(before, &config).await?;
        }
        config.updated_at = now;
        let action = if before.is_some() { "pay_provider.update" } else { "pay_provider.create" };
        let audit = self.provider_audit(actor, action, before.as_ref(), &config);
        let stored = self.repo.put_provider(config, Effects::audited(audit)).await?;
        Ok((&stored).into())
    }

    /// A raised default rate must fit every sub-merchant tenant whose rates follow it: those
    /// whose shares it raises are checked against their `max_ratio` (409 `over_max_ratio`).
    async fn check_raised_defaults(&self, before: &ProviderConfig, after: &ProviderConfig) -> Result<()> {
        let field = if after.platform_bp > before.platform_bp { "platform_bp" } else { "default_commission_bp" };
        let checks = (self.repo.sub_merchant_tenants(None).await?.into_iter())
            .filter_map(|t| {
                let (old, new) = (Rates::of(t.plan.as_ref(), Some(before)), Rates::of(t.plan.as_ref(), Some(after)));
                (new.total() > old.total()).then_some(RatioCheck { tenant_id: t.tenant_id, sub: t.sub, total: new.total() })
            })
            .collect();
        self.check_max_ratio(Some(after), checks, field).await
    }

    /// `POST /platform/pay-provider/cert/upload`: the provider's merchant key, certificate and
    /// platform key, with the same parts and checks as a tenant's upload. A `tenant_id` part
    /// is a 400: the account is the platform's.
    pub async fn upload_provider_keys(&self, actor: &Actor, upload: KeyUpload) -> Result<ProviderConfigView> {
        Self::platform_only(actor)?;
        if upload.tenant_id.is_some() {
            return Err(Error::invalid("tenant_id", "is not a part of the platform's upload"));
        }
        let before = self.repo.get_provider().await?.ok_or(Error::NotFound("service-provider account"))?;
        let mut config = before.clone();
        config.credentials = self.uploaded(&before.credentials, upload)?;
        config.updated_at = self.clock.now();
        let audit = self.provider_audit(actor, "pay_provider.upload_keys", Some(&before), &config);
        let stored = self.repo.put_provider(config, Effects::audited(audit)).await?;
        Ok((&stored).into())
    }

    /// `POST /platform/pay-provider/test`: the checks of a tenant's test, over the provider's
    /// keys; the round trip queries a made-up order of the provider's own.
    pub async fn test_provider(&self, actor: &Actor) -> Result<TestReport> {
        Self::platform_only(actor)?;
        let Some(provider) = self.repo.get_provider().await? else {
            let checks = vec![TestCheck { name: "config_complete".into(), ok: false, detail: "no service-provider account yet".into() }];
            return Ok(TestReport { ok: false, checks });
        };
        let account = provider.credentials.account(&provider.sp_mchid, &provider.sp_appid);
        Ok(self.check_credentials(&provider.credentials, provider.missing_parts(), account).await)
    }
}
