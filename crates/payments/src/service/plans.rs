//! Partners' share plans: the commission a partner takes of its sub-merchant tenants'
//! payments, the platform's rate for them, and where the commission goes. A plan is versioned
//! (each change a new version, shares record the one they were computed under) and checked
//! against the `max_ratio` of every sub-merchant tenant it would apply to, on the pay
//! platform, whenever a change raises what those tenants would share.
use super::payments::{PaymentService, platform_error};
use crate::api::*;
use crate::model::*;
use crate::ports::PayPlatformError;
use crate::sharing::*;
use atrium_kernel::{Actor, AuditRecord, Error, FieldError, Id, Party, Reason, Result};

/// The most basis points a rate can hold: all of it.
pub const MAX_BP: i64 = 10_000;

/// At most this many sub-merchants are named in one refusal: the rest are not checked.
const MAX_RATIO_ERRORS: usize = 20;

/// One sub-merchant a change of rates must fit: the rates would take `total` basis points of
/// each payment.
pub(super) struct RatioCheck {
    pub tenant_id: Id,
    pub sub: SubMerchant,
    pub total: u32,
}

/// `value` as basis points, or the error naming `field`.
pub(super) fn basis_points(field: &str, value: Option<i64>, errors: &mut Vec<FieldError>) -> Option<u32> {
    match value {
        Some(bp) if (0..=MAX_BP).contains(&bp) => u32::try_from(bp).ok(),
        Some(_) => {
            errors.push(FieldError::new(field, format!("must be basis points from 0 to {MAX_BP}")));
            None
        }
        None => None,
    }
}

impl PaymentService {
    /// 404 unless the partner exists in `actor`'s scope.
    async fn partner_in_scope(&self, actor: &Actor, partner_id: Id) -> Result<()> {
        if self.repo.partner(actor.party, partner_id).await? { Ok(()) } else { Err(Error::NotFound("partner")) }
    }

    /// `GET /partners/{id}/share-plan`: the partner's current plan with the rates in force.
    /// The platform reads any partner's, a partner its own; anyone else gets 404, as before a
    /// plan is set.
    pub async fn get_share_plan(&self, actor: &Actor, partner_id: Id) -> Result<SharePlanView> {
        self.partner_in_scope(actor, partner_id).await?;
        let plan = self.repo.share_plan(partner_id).await?.ok_or(Error::NotFound("share plan"))?;
        let provider = self.repo.get_provider().await?;
        Ok(SharePlanView::of(&plan, provider.as_ref()))
    }

    /// `PUT /partners/{id}/share-plan`: sets the partner's plan as a new version. Platform
    /// users only (a partner reads its plan and never sets it: 403). A plan that raises what a
    /// sub-merchant tenant of the partner would share above that sub-merchant's `max_ratio`
    /// is refused (409 `over_max_ratio`), naming the rate and each sub-merchant.
    pub async fn put_share_plan(&self, actor: &Actor, partner_id: Id, input: SharePlanPut) -> Result<SharePlanView> {
        if actor.party != Party::Platform {
            return Err(Error::forbidden(
                Reason::PartyNotAllowed,
                "only platform users set a partner's share plan; a partner reads its own",
            ));
        }
        let mut errors = Vec::new();
        let commission_bp = basis_points("commission_bp", input.commission_bp, &mut errors);
        let platform_bp = basis_points("platform_bp", input.platform_bp, &mut errors);
        let receiver = Receiver {
            kind: input.receiver.kind,
            account: input.receiver.account.into_string(),
            name: input.receiver.name.map(MerchantName::into_string),
        };
        if receiver.kind == ReceiverType::MerchantId {
            if !receiver.account.bytes().all(|b| b.is_ascii_digit()) {
                errors.push(FieldError::new("receiver.account", "must be a merchant id (digits) for a MERCHANT_ID receiver"));
            }
            if receiver.name.is_none() {
                errors.push(FieldError::new("receiver.name", "is required for a MERCHANT_ID receiver (the merchant's registered name)"));
            }
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        self.partner_in_scope(actor, partner_id).await?;
        let provider = self.repo.get_provider().await?;
        if receiver.kind == ReceiverType::MerchantId && provider.as_ref().is_some_and(|p| p.sp_mchid == receiver.account) {
            return Err(Error::invalid(
                "receiver.account",
                "is the platform's own merchant id; the platform takes its share as platform_bp",
            ));
        }
        let before = self.repo.share_plan(partner_id).await?;
        let plan = SharePlan {
            partner_id,
            version: before.as_ref().map_or(1, |b| b.version + 1),
            commission_bp,
            platform_bp,
            receiver,
            created_at: self.clock.now(),
        };
        let (old, new) = (Rates::of(before.as_ref(), provider.as_ref()), Rates::of(Some(&plan), provider.as_ref()));
        if new.total() > old.total() {
            let checks = self.repo.sub_merchant_tenants(Some(partner_id)).await?;
            let checks = checks.into_iter().map(|t| RatioCheck { tenant_id: t.tenant_id, sub: t.sub, total: new.total() }).collect();
            let field = if new.commission_bp > old.commission_bp { "commission_bp" } else { "platform_bp" };
            self.check_max_ratio(provider.as_ref(), checks, field).await?;
        }
        let as_json = |p: &SharePlan| serde_json::to_value(SharePlanView::of(p, provider.as_ref())).ok();
        let action = if before.is_some() { "share_plan.update" } else { "share_plan.create" };
        let audit = AuditRecord::by(actor, plan.created_at, action, "share_plan", Some(partner_id))
            .owned_by(Some(partner_id), None)
            .change(before.as_ref().and_then(as_json).as_ref(), as_json(&plan).as_ref());
        let stored = self.repo.put_share_plan(plan, Effects::audited(audit)).await?;
        Ok(SharePlanView::of(&stored, provider.as_ref()))
    }

    /// Refuses (409 `over_max_ratio`, naming `field` for each) when a check's total exceeds
    /// its sub-merchant's `max_ratio` on the pay platform; a sub-merchant the platform does
    /// not know as the provider's is a 409 `platform_state` naming `sub_mchid`.
    pub(super) async fn check_max_ratio(&self, provider: Option<&ProviderConfig>, checks: Vec<RatioCheck>, field: &str) -> Result<()> {
        let mut over = Vec::new();
        for check in checks {
            let account = provider.and_then(|p| p.account_for(check.sub.clone())).ok_or_else(|| {
                Error::blocked(
                    Reason::PaymentsNotReady,
                    field,
                    "the platform's service-provider account is incomplete: sub-merchants' max_ratio cannot be checked",
                )
            })?;
            let max_ratio = self.platform.max_ratio(&account).await.map_err(|e| ratio_refused(e, &check.sub.sub_mchid))?;
            if check.total > max_ratio {
                over.push(FieldError::new(
                    field,
                    format!(
                        "the shares would take {} bp of each payment of tenant {}, over the max_ratio of {} bp its sub-merchant {} allows",
                        check.total, check.tenant_id, max_ratio, check.sub.sub_mchid
                    ),
                ));
                if over.len() == MAX_RATIO_ERRORS {
                    break;
                }
            }
        }
        if over.is_empty() { Ok(()) } else { Err(Error::Blocked(Reason::OverMaxRatio, over)) }
    }
}

/// A refusal of the `max_ratio` query: the platform does not know the sub-merchant as the
/// provider's (400/404) names it; anything else is the platform's usual error.
fn ratio_refused(e: PayPlatformError, sub_mchid: &str) -> Error {
    match e {
        PayPlatformError::Refused { status: 400 | 404, code, message } => Error::blocked(
            Reason::PlatformState,
            "sub_mchid",
            format!("the pay platform does not know {sub_mchid} as a sub-merchant of the platform's service provider ({code}: {message})"),
        ),
        other => platform_error(other),
    }
}
