//! Refunds of shared money: before a refund of a shared transaction is sent, each receiver
//! gives back its part (the platform's 分账回退), so the refund never comes out of what the
//! tenant kept.
//!
//! The returns are planned with the refund's reservation ([`plan_returns`], under the
//! transaction's lock) and stored with it, each under a number fixed before the call. Then,
//! by the request and again by the refund's settle job until it is done:
//!
//! 1. each return still `processing` is asked of the platform (the same number again is the
//!    same return) and its answer recorded (a success adds to its share's `returned`);
//! 2. while one is still processing, the refund waits (its job asks again);
//! 3. when one failed, the refund is failed with the platform's `fail_reason` and never sent
//!    (what the others gave back is counted toward the next refund, so nothing is given back
//!    twice);
//! 4. when all succeeded, the refund is sent as any other.
//!
//! [`plan_returns`]: crate::plan_returns
use super::payments::PaymentService;
use crate::model::*;
use crate::ports::PayPlatformError;
use crate::sharing::*;
use atrium_kernel::{Error, Reason, RefundStatus, Result, failpoint};
use std::collections::HashMap;

/// What a return tells the receiver.
const RETURN_DESCRIPTION: &str = "refund";

/// Where the returns a refund needs stand.
pub(super) enum TakenBack {
    /// Every return succeeded (or none was needed): the refund may be sent.
    Done,
    /// A return is still processing on the platform: the refund waits.
    Waiting(String),
    /// The platform could not be reached: the refund waits, and a request says so.
    Unreachable(PayPlatformError),
    /// A return failed: the refund was failed, not sent; the error says why.
    Failed(Error),
}

impl PaymentService {
    /// Takes back from the shares of `tx` what `refund` needs first (steps 1–3 above).
    pub(super) async fn take_back(&self, tx: &Transaction, refund: &Refund) -> Result<TakenBack> {
        if tx.sub_mchid.is_none() {
            // Only a sub-merchant's payment is ever shared.
            return Ok(TakenBack::Done);
        }
        let mut returns = self.repo.returns_of(refund.tenant_id, refund.out_refund_no.clone()).await?;
        if returns.is_empty() {
            return Ok(TakenBack::Done);
        }
        if returns.iter().any(|r| r.status == ReturnStatus::Processing) {
            let shares: HashMap<_, _> = match self.repo.sharing(tx.id).await? {
                Some((_, shares)) => shares.into_iter().map(|s| (s.id, s)).collect(),
                None => return Err(Error::internal(format!("refund {} has returns but its payment no sharing", refund.out_refund_no))),
            };
            let account = self.account_of(tx).await?;
            for ret in returns.iter_mut().filter(|r| r.status == ReturnStatus::Processing) {
                let share = shares
                    .get(&ret.share_id)
                    .ok_or_else(|| Error::internal(format!("return {} of an unknown share", ret.out_return_no)))?;
                let order = ReturnOrder {
                    out_order_no: share.out_order_no.clone(),
                    out_return_no: ret.out_return_no.clone(),
                    return_mchid: share.receiver.account.clone(),
                    amount: ret.amount,
                    description: RETURN_DESCRIPTION.into(),
                };
                let answer = match self.platform.return_share(&account, &order).await {
                    Ok(answer) => answer,
                    // Refused outright (not a merchant's line, over what it was paid, …):
                    // nothing was taken back.
                    Err(PayPlatformError::Refused { code, message, .. }) => PlatformReturn {
                        out_return_no: ret.out_return_no.clone(),
                        return_id: None,
                        result: ReturnResult::Failed,
                        fail_reason: Some(format!("{code}: {message}")),
                        amount: None,
                        finish_time: None,
                    },
                    Err(e) => return Ok(TakenBack::Unreachable(e)),
                };
                failpoint!("ledger.return.sent");
                if let Some(settled) = self.record_return(ret, &answer).await? {
                    *ret = settled;
                }
                failpoint!("ledger.return.recorded");
            }
        }
        if let Some(waiting) = returns.iter().find(|r| r.status == ReturnStatus::Processing) {
            return Ok(TakenBack::Waiting(format!("the return {} from a share is processing", waiting.out_return_no)));
        }
        match returns.iter().find(|r| r.status == ReturnStatus::Failed) {
            Some(failed) => {
                let fail_reason = failed.fail_reason.clone().unwrap_or_else(|| "FAILED".into());
                self.fail_refund(refund, &fail_reason).await?;
                Ok(TakenBack::Failed(return_failed(&refund.out_refund_no, Some(failed.share_id), &fail_reason)))
            }
            None => Ok(TakenBack::Done),
        }
    }

    /// Records the platform's answer about a return; the return as written (or as another
    /// runner wrote it first, read again), `None` when the answer changes nothing.
    async fn record_return(&self, ret: &ShareReturn, answer: &PlatformReturn) -> Result<Option<ShareReturn>> {
        let now = self.clock.now();
        let status = match answer.result {
            ReturnResult::Processing => return Ok(None),
            ReturnResult::Success => ReturnStatus::Succeeded,
            ReturnResult::Failed => ReturnStatus::Failed,
        };
        let settled = ShareReturn {
            status,
            return_id: answer.return_id.clone().or_else(|| ret.return_id.clone()),
            fail_reason: (status == ReturnStatus::Failed).then(|| answer.fail_reason.clone().unwrap_or_else(|| "FAILED".into())),
            settled_at: Some(answer.finish_time.unwrap_or(now)),
            updated_at: now,
            ..ret.clone()
        };
        if self.repo.settle_return(settled.clone(), ret.status).await? {
            return Ok(Some(settled));
        }
        // Another runner recorded it first: its record stands.
        let again = self.repo.returns_of(ret.tenant_id, ret.out_refund_no.clone()).await?;
        Ok(again.into_iter().find(|r| r.id == ret.id))
    }

    /// Fails `refund` (processing, as read), never sent because a return failed, with the
    /// platform's reason. A lost race means another runner settled it the same way: returns
    /// only move forward.
    async fn fail_refund(&self, refund: &Refund, fail_reason: &str) -> Result<()> {
        if refund.status != RefundStatus::Processing {
            return Ok(());
        }
        let failed = Refund {
            status: RefundStatus::Failed,
            fail_reason: Some(fail_reason.to_owned()),
            updated_at: self.clock.now(),
            ..refund.clone()
        };
        let effects = Effects { jobs: self.order_refund_event(&failed).into_iter().collect(), audit: None, events: Vec::new() };
        self.repo.update_refund(failed, RefundStatus::Processing, effects).await?;
        Ok(())
    }
}

/// The answer to a refund that was not sent because a share (`share_id`, when known) could not
/// be taken back first (409).
pub(super) fn return_failed(out_refund_no: &str, share_id: Option<atrium_kernel::Id>, fail_reason: &str) -> Error {
    let share = share_id.map_or_else(|| "a share".to_owned(), |id| format!("share {id}"));
    Error::PlatformFailed {
        reason: Reason::ReturnFailed,
        message: format!(
            "refund {out_refund_no} was not sent: {share} of the payment could not be taken back from its receiver first ({fail_reason})"
        ),
        fail_reason: fail_reason.to_owned(),
    }
}
