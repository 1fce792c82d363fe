//! Discrepancies: the list, and a person resolving one ([`crate::discrepancies`]).
//!
//! A resolution is one write ([`PaymentRepo::resolve_discrepancy`](crate::PaymentRepo)),
//! conditional on the discrepancy still being open: of two people (or two retries) resolving
//! one at once, one wins and the other is told it was resolved. A refund of the excess is
//! stored with that write, with its settle job, under a number fixed there; it is sent right
//! after, and should that fail or the process stop, its settle job sends it, under the same
//! number, so the platform refunds it once.
use super::ledger::Asked;
use super::payments::{PaymentService, platform_error};
use super::share_checks::unknown;
use crate::api::{DiscrepancyView, RefundView, ResolveRequest};
use crate::discrepancies::*;
use crate::model::*;
use crate::sharing::{Share, ShareStatus};
use atrium_kernel::secret::nonce;
use atrium_kernel::{Actor, AuditRecord, Error, Id, Page, Party, Reason, RefundStatus, Result, failpoint};

/// Tries of a resolution that lost a race with a change of what it resolves.
const ATTEMPTS: usize = 3;

impl PaymentService {
    /// `GET /miniprogram/payment/discrepancies`: those in the caller's scope, newest first.
    pub async fn list_discrepancies(&self, actor: &Actor, query: DiscrepancyQuery) -> Result<Page<DiscrepancyView>> {
        let page = self.repo.list_discrepancies(actor.party, query).await?;
        // Few are ever resolved with a refund; each such one reads it.
        let mut refunds = std::collections::HashMap::new();
        for d in &page.items {
            refunds.insert(d.id, self.excess_refund(d).await?);
        }
        Ok(page.map(|d| DiscrepancyView { refund: refunds.remove(&d.id).flatten(), ..d.into() }))
    }

    /// `GET /miniprogram/payment/discrepancies/{id}`.
    pub async fn get_discrepancy(&self, actor: &Actor, id: Id) -> Result<DiscrepancyView> {
        let d = self.repo.get_discrepancy(actor.party, id).await?.ok_or(Error::NotFound("discrepancy"))?;
        self.discrepancy_view(d).await
    }

    /// `d` as shown, with the refund of its excess as it stands now.
    async fn discrepancy_view(&self, d: Discrepancy) -> Result<DiscrepancyView> {
        let refund = self.excess_refund(&d).await?;
        Ok(DiscrepancyView { refund, ..d.into() })
    }

    /// The refund of `d`'s excess as it stands, if it has one.
    async fn excess_refund(&self, d: &Discrepancy) -> Result<Option<RefundView>> {
        match &d.out_refund_no {
            Some(no) => Ok(self.repo.get_refund(d.tenant_id, no.clone()).await?.map(RefundView::from)),
            None => Ok(None),
        }
    }

    /// `POST /miniprogram/payment/discrepancies/{id}/resolve`: platform users, and a tenant's
    /// own users, resolve one (a partner, whose commission a share is, does not). 409 when it
    /// was resolved already, when the action does not fit what the platform holds now, or
    /// when what it concerns kept changing.
    pub async fn resolve_discrepancy(&self, actor: &Actor, id: Id, input: ResolveRequest) -> Result<DiscrepancyView> {
        if matches!(actor.party, Party::Partner { .. }) {
            return Err(Error::forbidden(
                Reason::PartyNotAllowed,
                "discrepancies are resolved by the platform or the tenant, not a partner",
            ));
        }
        let note = input.checked_note()?;
        for _ in 0..ATTEMPTS {
            let found = self.repo.get_discrepancy(actor.party, id).await?.ok_or(Error::NotFound("discrepancy"))?;
            if found.status == DiscrepancyStatus::Resolved {
                return Err(resolved_already(&found));
            }
            let resolution = match found.kind {
                DiscrepancyKind::Amount | DiscrepancyKind::PaidTwice => self.payment_resolution(actor, &found, input.action, &note).await?,
                DiscrepancyKind::Share | DiscrepancyKind::Return => self.share_resolution(actor, &found, input.action, &note).await?,
            };
            let Some(resolution) = resolution else { continue };
            if !self.repo.resolve_discrepancy(resolution.clone()).await? {
                continue;
            }
            failpoint!("ledger.discrepancy.resolved");
            if let (Some(refund), Some((tx, _))) = (&resolution.refund, &resolution.payment) {
                self.send_excess(tx, refund).await;
            }
            return self.discrepancy_view(resolution.discrepancy).await;
        }
        Err(Error::conflict(Reason::TryAgain, "the payment kept changing while the discrepancy was being resolved; try again"))
    }

    /// The resolution of a payment's discrepancy, from what the platform reports of the
    /// payment now; `None` when the transaction no longer holds one (read again).
    async fn payment_resolution(&self, actor: &Actor, d: &Discrepancy, action: ResolveAction, note: &str) -> Result<Option<Resolution>> {
        let tx = self.transaction(d.tenant_id, &d.out_trade_no).await?;
        if tx.discrepancy.is_none() {
            return Ok(None);
        }
        let account = self.account_of(&tx).await?;
        let report = self.platform.query_order(&account, &tx.out_trade_no).await.map_err(platform_error)?;
        if let Some(why) = payment_refusal(&tx, d.kind, action, &report) {
            return Err(Error::conflict(Reason::State, why));
        }
        let now = self.clock.now();
        let reported = report.amount.unwrap_or(tx.amount);
        let after = match d.kind {
            // Taken at what the platform holds; any excess then leaves as a refund of it.
            DiscrepancyKind::Amount => paid_as_reported(&tx, &report, now),
            // Stays closed (its order was paid another way); a refund of all of it is of what
            // the platform holds.
            _ => Transaction {
                amount: if action == ResolveAction::RefundExcess { reported } else { tx.amount },
                discrepancy: None,
                updated_at: now,
                ..tx.clone()
            },
        };
        let excess = excess(d.kind, tx.amount, reported);
        let refund = (action == ResolveAction::RefundExcess).then(|| Refund {
            id: 0,
            tenant_id: tx.tenant_id,
            out_trade_no: tx.out_trade_no.clone(),
            // A payment taken twice is refunded apart from its order, which stays paid the
            // other way.
            order_id: if d.kind == DiscrepancyKind::PaidTwice { None } else { tx.order_id },
            out_refund_no: excess_refund_no(d.id),
            refund_id: None,
            amount: excess,
            status: RefundStatus::Processing,
            reason: Some("Refund of an excess payment".into()),
            requested_by: Some(actor.user_id),
            fail_reason: None,
            succeeded_at: None,
            created_at: now,
            updated_at: now,
        });
        let mut effects = Effects::default();
        if d.kind == DiscrepancyKind::Amount {
            effects.jobs.extend(self.order_event(&after));
            effects.jobs.extend(self.share_job(&after));
        }
        if let Some(refund) = &refund {
            effects.jobs.push(self.settle_refund_job(tx.tenant_id, &refund.out_refund_no));
            effects.jobs.extend(self.order_refund_event(refund));
        }
        let resolved = resolved(d, action, note, actor, refund.as_ref().map(|r| r.out_refund_no.clone()), now);
        effects.audit = Some(self.resolution_audit(
            actor,
            &resolved,
            serde_json::json!({
                "out_trade_no": tx.out_trade_no,
                "order_id": tx.order_id,
                "asked": tx.amount,
                "reported": reported,
                "paid": if d.kind == DiscrepancyKind::Amount { Some(after.amount) } else { None },
                "refund": refund.as_ref().map(|r| serde_json::json!({"out_refund_no": r.out_refund_no, "amount": r.amount})),
            }),
        ));
        Ok(Some(Resolution { discrepancy: resolved, payment: Some((after, tx.trade_state)), refund, share: None, ret: None, effects }))
    }

    /// The resolution of a share's (or its return's) discrepancy: the platform's record taken,
    /// asked afresh; `None` when the share no longer holds one (read again).
    async fn share_resolution(&self, actor: &Actor, d: &Discrepancy, action: ResolveAction, note: &str) -> Result<Option<Resolution>> {
        if action == ResolveAction::RefundExcess {
            return Err(Error::conflict(
                Reason::State,
                "a share's difference lies with its receiver, not the payer: nothing is refunded; accept the platform's record",
            ));
        }
        let share_id = d.share_id.ok_or_else(|| Error::internal(format!("discrepancy {} of a share names none", d.id)))?;
        let share: Share = self.repo.get_share(Party::Platform, share_id).await?.ok_or(Error::NotFound("share"))?;
        if share.discrepancy.is_none() {
            return Ok(None);
        }
        let tx = self.transaction(d.tenant_id, &share.out_trade_no).await?;
        let account = self.account_of(&tx).await?;
        let now = self.clock.now();
        let (after, ret) = match d.return_id {
            Some(return_id) => {
                let ret = self.repo.get_return(d.tenant_id, return_id).await?.ok_or(Error::NotFound("return"))?;
                let answer = match self.platform.query_return(&account, &share.out_order_no, &ret.out_return_no).await {
                    Ok(answer) => Some(answer),
                    Err(e) if unknown(&e) => None,
                    Err(e) => return Err(platform_error(e)),
                };
                let (after, adopted) =
                    adopt_return(&share, &ret, answer.as_ref(), now).map_err(|why| Error::conflict(Reason::TryAgain, why))?;
                (after, Some((adopted, ret.status)))
            }
            None => {
                let transaction_id = tx.transaction_id.clone().unwrap_or_default();
                let order = match self.platform.query_share(&account, &transaction_id, &share.out_order_no).await {
                    Ok(order) => Some(order),
                    Err(e) if unknown(&e) => None,
                    Err(e) => return Err(platform_error(e)),
                };
                (adopt_share(&share, order.as_ref(), now), None)
            }
        };
        let mut effects = Effects::default();
        // The sharing job carries on from what the share holds now (settles, unfreezes).
        if after.status != ShareStatus::Closed {
            effects.jobs.push(self.share_job_now(share.tenant_id, &share.out_trade_no, &format!("resolved:{}", d.id)));
        }
        let resolved = resolved(d, action, note, actor, None, now);
        let ours: &str = share.status.into();
        let theirs: &str = after.status.into();
        effects.audit = Some(self.resolution_audit(actor, &resolved, serde_json::json!({
            "out_trade_no": share.out_trade_no,
            "share_id": share.id,
            "out_order_no": share.out_order_no,
            "before": {"status": ours, "amount": share.amount, "returned": share.returned},
            "after": {"status": theirs, "amount": after.amount, "returned": after.returned},
            "return": ret.as_ref().map(|(r, _)| serde_json::json!({"out_return_no": r.out_return_no, "status": <&str>::from(r.status), "amount": r.amount})),
        })));
        Ok(Some(Resolution { discrepancy: resolved, payment: None, refund: None, share: Some((share, after)), ret, effects }))
    }

    /// Sends the refund of an excess stored with its resolution, as the refund routes send
    /// one. A failure here is not the caller's: the refund stays `processing` and its settle
    /// job sends it under the same number (or it shows `failed` with the platform's refusal).
    async fn send_excess(&self, tx: &Transaction, refund: &Refund) {
        let asked = Asked {
            out_refund_no: refund.out_refund_no.clone(),
            amount: refund.amount,
            reason: refund.reason.clone(),
            requested_by: refund.requested_by,
            audit: None,
        };
        if let Err(e) = self.refund_transaction(tx, asked).await {
            log::warn!(
                "refund {} of the excess of {} (tenant {}) not settled yet: {e}",
                refund.out_refund_no,
                tx.out_trade_no,
                tx.tenant_id
            );
        }
    }

    fn resolution_audit(&self, actor: &Actor, d: &Discrepancy, details: serde_json::Value) -> AuditRecord {
        let action: &str = d.action.map_or("", <&str>::from);
        AuditRecord::by(actor, self.clock.now(), "payment.discrepancy_resolved", "payment_discrepancy", Some(d.id))
            .owned_by(None, Some(d.tenant_id))
            .with_after(serde_json::json!({
                "kind": <&str>::from(d.kind),
                "description": d.description,
                "action": action,
                "note": d.note,
                "details": details,
            }))
    }
}

/// `d` resolved by `actor` with `action` and `note` at `now`.
fn resolved(
    d: &Discrepancy,
    action: ResolveAction,
    note: &str,
    actor: &Actor,
    out_refund_no: Option<String>,
    now: atrium_kernel::Timestamp,
) -> Discrepancy {
    Discrepancy {
        status: DiscrepancyStatus::Resolved,
        action: Some(action),
        note: Some(note.to_owned()),
        resolved_by: Some(actor.user_id),
        out_refund_no,
        resolved_at: Some(now),
        ..d.clone()
    }
}

/// The number of the refund of discrepancy `id`'s excess: fixed in the write that resolves
/// it. A refund number of a client's could be the same text; the random part makes that
/// practically impossible (and the unique index refuses it, writing nothing).
fn excess_refund_no(id: Id) -> String {
    format!("EX{id}-{}", nonce(8))
}

fn resolved_already(d: &Discrepancy) -> Error {
    let how: &str = d.action.map_or("", <&str>::from);
    let at = d.resolved_at.map(|t| t.to_rfc3339()).unwrap_or_default();
    Error::conflict(Reason::State, format!("discrepancy {} was already resolved ({how}, {at})", d.id))
}
