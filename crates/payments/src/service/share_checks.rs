//! The daily check of shares and returns against the pay platform (`payment.reconcile_shares`).
//!
//! Queued each morning with the trade-bill reconciliation, for every tenant with payment
//! activity the day before. It reads the tenant's shares and returns that changed that day, a
//! page at a time, and asks the platform for each share request and each return sent
//! ([`check_share`], [`check_return`]):
//!
//! - the same on both sides: nothing to do;
//! - ours still processing, the platform's final: the sharing job (or the refund's settle job)
//!   runs now and settles it, as it would have;
//! - anything else (another amount, another result, a request or return the platform does
//!   not know): a **discrepancy**, kept on the share (`discrepancy`), audited
//!   (`share.discrepancy`), counted in `/metrics`; the payment is not refunded and the share
//!   not retried until a person resolves it.
//!
//! A page that was full queues the next page as a job of its own, so no run holds its lease
//! long; the platform unreachable retries the page later.
use super::jobs::Step;
use super::payments::PaymentService;
use crate::discrepancies::NewDiscrepancy;
use crate::model::*;
use crate::ports::PayPlatformError;
use crate::sharing::*;
use atrium_kernel::{AuditRecord, Error, Id, NewJob, Party, Result, china_day};
use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};

/// The job that checks one tenant's shares and returns of a day against the platform.
pub const RECONCILE_SHARES: &str = "payment.reconcile_shares";
/// Payments (each with its shares) and returns checked per run; a full page queues the next.
const PAGE: u32 = 200;

/// Where a `payment.reconcile_shares` run starts.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub(super) struct SharesPage {
    date: NaiveDate,
    /// Payments with an id above this one.
    #[serde(default)]
    after_payment: Id,
    /// Returns with an id above this one.
    #[serde(default)]
    after_return: Id,
}

/// Whether a refusal says the platform does not know what was asked for.
pub(super) fn unknown(e: &PayPlatformError) -> bool {
    matches!(e, PayPlatformError::Refused { code, .. } if matches!(code.as_str(), "RESOURCE_NOT_EXISTS" | "ORDER_NOT_EXIST" | "NOT_FOUND"))
}

impl PaymentService {
    /// The job checking `tenant_id`'s shares and returns of `date` from the page after
    /// `after_payment` and `after_return`.
    pub(super) fn reconcile_shares_job(&self, tenant_id: Id, date: NaiveDate, after_payment: Id, after_return: Id) -> NewJob {
        NewJob {
            kind: RECONCILE_SHARES.into(),
            tenant_id: Some(tenant_id),
            payload: serde_json::json!(SharesPage { date, after_payment, after_return }),
            run_at: self.clock.now(),
            dedupe_key: Some(format!("{tenant_id}:{date}:{after_payment}:{after_return}")),
        }
    }

    /// One page of the check (see the module documentation).
    pub(super) async fn reconcile_shares(&self, tenant_id: Id, page: SharesPage) -> Result<Step> {
        let (from, to) = china_day(page.date);
        let shares = self.repo.shares_changed(tenant_id, from, to, page.after_payment, PAGE).await?;
        let returns = self.repo.returns_changed(tenant_id, from, to, page.after_return, PAGE).await?;
        let mut accounts = HashMap::new();
        let mut transactions: HashMap<String, Transaction> = HashMap::new();
        let (mut checked, mut settling, mut differing) = (0, 0, 0);

        // Each share request once: the shares of one payment last sent under one number.
        let mut requests: BTreeMap<(Id, &str), Vec<&Share>> = BTreeMap::new();
        for share in &shares {
            requests.entry((share.payment_id, share.out_order_no.as_str())).or_default().push(share);
        }
        for ((_, out_order_no), of) in &requests {
            let out_trade_no = &of[0].out_trade_no;
            let open: Vec<&Share> = of.iter().copied().filter(|s| s.discrepancy.is_none()).collect();
            if open.is_empty() {
                continue;
            }
            let Some(tx) = self.transaction_once(&mut transactions, tenant_id, out_trade_no).await? else { continue };
            let Some(transaction_id) = tx.transaction_id.clone() else {
                log::error!("share reconciliation: transaction {out_trade_no} of tenant {tenant_id} is shared but has no platform id");
                continue;
            };
            let account = self.account_once(&mut accounts, &tx).await?;
            let order = match self.platform.query_share(&account, &transaction_id, out_order_no).await {
                Ok(order) => Some(order),
                Err(e) if unknown(&e) => None,
                Err(e @ PayPlatformError::Refused { .. }) => {
                    log::warn!("share reconciliation: share request {out_order_no} of tenant {tenant_id} could not be asked: {e}");
                    continue;
                }
                Err(e) => return Ok(Step::Again(e.to_string())),
            };
            for share in open {
                checked += 1;
                match check_share(share, order.as_ref()) {
                    Check::Agrees => {}
                    Check::Settle => {
                        settling += 1;
                        self.jobs.enqueue(self.share_job_now(tenant_id, out_trade_no, &format!("reconcile:{out_order_no}"))).await?;
                    }
                    Check::Differs(why) => differing += usize::from(self.share_differs(share, None, why).await?),
                }
            }
        }

        let mut of_returns: HashMap<Id, Share> = HashMap::new();
        for ret in &returns {
            if !ret.amount.is_positive() {
                continue;
            }
            let share = match of_returns.get(&ret.share_id) {
                Some(share) => share.clone(),
                None => match self.repo.get_share(Party::Platform, ret.share_id).await? {
                    Some(share) => {
                        of_returns.insert(share.id, share.clone());
                        share
                    }
                    None => return Err(Error::internal(format!("return {} of an unknown share", ret.out_return_no))),
                },
            };
            if share.discrepancy.is_some() {
                continue;
            }
            let Some(tx) = self.transaction_once(&mut transactions, tenant_id, &share.out_trade_no).await? else { continue };
            let account = self.account_once(&mut accounts, &tx).await?;
            let answer = match self.platform.query_return(&account, &share.out_order_no, &ret.out_return_no).await {
                Ok(answer) => Some(answer),
                Err(e) if unknown(&e) => None,
                Err(e @ PayPlatformError::Refused { .. }) => {
                    log::warn!("share reconciliation: return {} of tenant {tenant_id} could not be asked: {e}", ret.out_return_no);
                    continue;
                }
                Err(e) => return Ok(Step::Again(e.to_string())),
            };
            checked += 1;
            match check_return(ret, answer.as_ref()) {
                Check::Agrees => {}
                Check::Settle => {
                    settling += 1;
                    let mut job = self.settle_refund_job(tenant_id, &ret.out_refund_no);
                    job.run_at = self.clock.now();
                    self.jobs.enqueue(job).await?;
                }
                Check::Differs(why) => differing += usize::from(self.share_differs(&share, Some(ret), why).await?),
            }
        }

        let payments_seen = requests.keys().map(|(payment_id, _)| payment_id).collect::<BTreeSet<_>>().len();
        if payments_seen >= PAGE as usize || returns.len() >= PAGE as usize {
            let after_payment = shares.last().map_or(page.after_payment, |s| s.payment_id);
            let after_return = returns.last().map_or(page.after_return, |r| r.id);
            self.jobs.enqueue(self.reconcile_shares_job(tenant_id, page.date, after_payment, after_return)).await?;
        }
        if differing > 0 {
            log::error!("share reconciliation {}: tenant {tenant_id}: {differing} shares differ from the pay platform's record", page.date);
        }
        log::info!(
            "share reconciliation {}: tenant {tenant_id}: {checked} checked, {settling} being settled, {differing} discrepancies",
            page.date
        );
        Ok(Step::Settled)
    }

    /// `out_trade_no` of the tenant, read once per run into `read`; `None` (logged) when gone.
    async fn transaction_once(
        &self,
        read: &mut HashMap<String, Transaction>,
        tenant_id: Id,
        out_trade_no: &str,
    ) -> Result<Option<Transaction>> {
        if let Some(tx) = read.get(out_trade_no) {
            return Ok(Some(tx.clone()));
        }
        let Some(tx) = self.repo.get_transaction(tenant_id, out_trade_no.to_owned()).await? else {
            log::error!("share reconciliation: tenant {tenant_id} has no transaction {out_trade_no} it has shares of");
            return Ok(None);
        };
        read.insert(out_trade_no.to_owned(), tx.clone());
        Ok(Some(tx))
    }

    /// Keeps `why` as `share`'s discrepancy (audited); whether it was recorded now (not when
    /// the share changed meanwhile or already holds one).
    async fn share_differs(&self, share: &Share, ret: Option<&ShareReturn>, why: String) -> Result<bool> {
        log::error!("share {} of transaction {} (tenant {}): {why}", share.id, share.out_trade_no, share.tenant_id);
        let now = self.clock.now();
        let audit = AuditRecord::system(now, "share.discrepancy", "payment_share", Some(share.id))
            .owned_by(share.partner_id, Some(share.tenant_id))
            .with_after(serde_json::json!({ "out_trade_no": share.out_trade_no, "out_order_no": share.out_order_no, "discrepancy": why }));
        let found = NewDiscrepancy::of_share(share, ret, &why, now);
        let effects = Effects::audited(audit).with_event(found.event(None));
        self.repo.share_discrepancy(share.clone(), found, effects).await
    }
}
