//! The sharing job (`payment.share`): profit sharing of a sub-merchant's paid transaction.
//!
//! Queued with the write that records the payment, due [`PaymentSettings::sharing_delay`]
//! after it (the platform refuses a share in the first minute). One run walks the steps as far
//! as they go; each is idempotent, so a run that crashed, or two runners at once, redo
//! nothing:
//!
//! 1. **Begin**: once no refund of the payment is processing, the base (paid minus refunded)
//!    and the rates (the partner's share plan, else the provider's defaults) give each
//!    receiver `floor(base × bp / 10,000)`; the shares are stored with the request number
//!    they will be sent under ([`share_order_no`]) — one row per receiver, written once per
//!    transaction ([`PaymentRepo::begin_sharing`]).
//! 2. **Request** what is `pending`: the receivers are added (idempotent on the platform), then
//!    the share is requested under its fixed number, with `unfreeze_unsplit: false`; a lost
//!    answer is asked again as the same request. A refusal closes the shares of that request
//!    with the platform's reason.
//! 3. **Settle** what is `processing` from the platform's query: `SUCCESS` → `succeeded`,
//!    `CLOSED` → `closed` with its `fail_reason` (kept, shown, counted; retried by an
//!    operator under a new number, [`PaymentService::retry_share`]).
//! 4. **Unfreeze** the rest for the tenant once every share succeeded (under a fixed number
//!    too); while one is closed the rest stays frozen.
//!
//! [`PaymentSettings::sharing_delay`]: crate::PaymentSettings::sharing_delay
//! [`PaymentRepo::begin_sharing`]: crate::PaymentRepo::begin_sharing
use super::jobs::Step;
use super::payments::PaymentService;
use crate::api::ShareView;
use crate::model::*;
use crate::ports::PayPlatformError;
use crate::sharing::*;
use atrium_kernel::{Actor, AuditRecord, Error, Id, Money, NewJob, Page, Party, PaymentMethod, Reason, RefundStatus, Result, failpoint};
use std::collections::{BTreeMap, HashSet};

/// The job that shares a sub-merchant's paid transaction.
pub const SHARE: &str = "payment.share";
/// What a share line tells the receiver.
const SHARE_DESCRIPTION: &str = "commission";
/// What an unfreeze request says.
const UNFREEZE_DESCRIPTION: &str = "the rest to the sub-merchant";
/// Receivers remembered as added; past that the memory starts again (adding is idempotent).
const MAX_ADDED: usize = 10_000;

/// The receivers this instance has added for each sub-merchant, so a payment does not add them
/// again. Only a cache: adding again is harmless, and a retry adds afresh.
#[derive(Default)]
pub(super) struct AddedReceivers(std::sync::Mutex<HashSet<AddedKey>>);

/// A receiver added for a sub-merchant: the sub-merchant, the receiver's type, account and name.
type AddedKey = (String, ReceiverType, String, Option<String>);

impl AddedReceivers {
    fn key(sub_mchid: &str, r: &Receiver) -> AddedKey {
        (sub_mchid.to_owned(), r.kind, r.account.clone(), r.name.clone())
    }

    fn contains(&self, sub_mchid: &str, r: &Receiver) -> bool {
        self.0.lock().map(|set| set.contains(&Self::key(sub_mchid, r))).unwrap_or(false)
    }

    fn insert(&self, sub_mchid: &str, r: &Receiver) {
        if let Ok(mut set) = self.0.lock() {
            if set.len() >= MAX_ADDED {
                set.clear();
            }
            set.insert(Self::key(sub_mchid, r));
        }
    }
}

impl PaymentService {
    /// The sharing job of a transaction just paid, due `sharing_delay` after the payment;
    /// `None` unless it is a sub-merchant's platform payment.
    pub(super) fn share_job(&self, tx: &Transaction) -> Option<NewJob> {
        if !shared(tx) {
            return None;
        }
        let paid_at = tx.success_time.unwrap_or(tx.updated_at);
        Some(NewJob {
            kind: SHARE.into(),
            tenant_id: Some(tx.tenant_id),
            payload: serde_json::json!({ "out_trade_no": tx.out_trade_no }),
            run_at: paid_at + self.settings.sharing_delay,
            dedupe_key: Some(format!("{}:{}", tx.tenant_id, tx.out_trade_no)),
        })
    }

    /// A sharing job to run now, keyed by `why` (so it is queued beside a pending one that
    /// waits for its back-off).
    pub(super) fn share_job_now(&self, tenant_id: Id, out_trade_no: &str, why: &str) -> NewJob {
        NewJob {
            kind: SHARE.into(),
            tenant_id: Some(tenant_id),
            payload: serde_json::json!({ "out_trade_no": out_trade_no }),
            run_at: self.clock.now(),
            dedupe_key: Some(format!("{tenant_id}:{out_trade_no}:{why}")),
        }
    }

    /// One run of the sharing job of the tenant's transaction `out_trade_no`.
    pub(super) async fn share_payment(&self, tenant_id: Id, out_trade_no: &str) -> Result<Step> {
        let Some(tx) = self.repo.get_transaction(tenant_id, out_trade_no.to_owned()).await? else {
            log::warn!("sharing job: tenant {tenant_id} has no transaction {out_trade_no}");
            return Ok(Step::Settled);
        };
        if !shared(&tx) {
            return Ok(Step::Settled);
        }
        let Some(transaction_id) = tx.transaction_id.clone() else {
            log::error!("sharing job: paid transaction {out_trade_no} of tenant {tenant_id} has no platform transaction id");
            return Ok(Step::Settled);
        };
        let (sharing, shares) = match self.repo.sharing(tx.id).await? {
            Some(found) => found,
            None => match self.begin_sharing(&tx).await? {
                Ok(begun) => begun,
                Err(wait) => return Ok(Step::Again(wait)),
            },
        };
        let account = self.account_of(&tx).await?;
        let sub_mchid = account.sub_merchant.as_ref().map(|s| s.sub_mchid.clone()).unwrap_or_default();

        let mut book = Book { shares, stale: false };

        // Request what is pending, one request per number.
        for (no, group) in by_order_no(&book.shares, ShareStatus::Pending) {
            match self.request_share(&account, &sub_mchid, &transaction_id, &no, group).await? {
                Sent::Unreachable(wait) => return Ok(Step::Again(wait)),
                Sent::Recorded(written) => book.take(written),
            }
        }
        self.refresh(&mut book, tx.id).await?;
        // Settle what is processing from the platform's record.
        for (no, group) in by_order_no(&book.shares, ShareStatus::Processing) {
            let answer = match self.platform.query_share(&account, &transaction_id, &no).await {
                Ok(answer) => answer,
                // Never received (the request was lost before it arrived): ask again, same number.
                Err(PayPlatformError::Refused { code, .. }) if code == "RESOURCE_NOT_EXISTS" => {
                    let again: Vec<Share> = group.iter().map(|s| Share { status: ShareStatus::Pending, ..s.clone() }).collect();
                    self.record_shares(group, again, Effects::default()).await?;
                    return Ok(Step::Again(format!("share request {no} was not received; it is sent again")));
                }
                Err(e) => return Ok(Step::Again(e.to_string())),
            };
            book.take(self.record_answer(group, &answer).await?);
        }
        self.refresh(&mut book, tx.id).await?;
        let shares = book.shares;
        if shares.iter().any(|s| matches!(s.status, ShareStatus::Pending | ShareStatus::Processing)) {
            return Ok(Step::Again("the share is processing".into()));
        }
        if shares.iter().any(|s| s.status == ShareStatus::Closed) {
            // The rest stays frozen until a retry of the closed share succeeds.
            log::warn!("sharing of {out_trade_no} of tenant {tenant_id}: a share is closed; waiting for a retry");
            return Ok(Step::Settled);
        }
        if sharing.unfrozen_at.is_some() {
            return Ok(Step::Settled);
        }
        let order = UnfreezeOrder { transaction_id, out_order_no: unfreeze_order_no(tx.id), description: UNFREEZE_DESCRIPTION.into() };
        match self.platform.unfreeze(&account, &order).await {
            Ok(answer) if answer.state == ShareOrderState::Finished => {
                failpoint!("sharing.unfrozen");
                self.repo.set_unfrozen(tx.id, self.clock.now()).await?;
                Ok(Step::Settled)
            }
            Ok(_) => Ok(Step::Again("the unfreeze is processing".into())),
            Err(e) => Ok(Step::Again(format!("the rest could not be unfrozen: {e}"))),
        }
    }

    /// Step 1: computes and stores the transaction's shares; `Err(why)` to wait (a refund of
    /// it is processing).
    async fn begin_sharing(&self, tx: &Transaction) -> Result<std::result::Result<(Sharing, Vec<Share>), String>> {
        let refunds = self.repo.refunds_of(tx.tenant_id, tx.out_trade_no.clone()).await?;
        if refunds.iter().any(|r| r.status == RefundStatus::Processing) {
            return Ok(Err("a refund of the payment is processing; it is shared once the refund settles".into()));
        }
        let refunded: i64 = refunds.iter().filter(|r| r.status == RefundStatus::Succeeded).map(|r| r.amount.fen()).sum();
        let base = Money::from_fen((tx.amount.fen() - refunded).max(0));
        let provider = self.repo.get_provider().await?.ok_or(Error::NotFound("service provider"))?;
        let partner_id = self.repo.tenant(Party::Platform, tx.tenant_id).await?.and_then(|t| t.partner_id);
        let plan = match partner_id {
            Some(p) => self.repo.share_plan(p).await?,
            None => None,
        };
        let rates = Rates::of(plan.as_ref(), Some(&provider));
        let platform = Receiver { kind: ReceiverType::MerchantId, account: provider.sp_mchid.clone(), name: provider.sp_name.clone() };
        let now = self.clock.now();
        let no = share_order_no(tx.id);
        let shares = split(base, rates, &platform, plan.as_ref().map(|p| &p.receiver))
            .into_iter()
            .map(|(role, receiver, amount)| Share {
                id: 0,
                tenant_id: tx.tenant_id,
                payment_id: tx.id,
                out_trade_no: tx.out_trade_no.clone(),
                partner_id,
                role,
                receiver,
                amount,
                returned: Money::ZERO,
                withheld: Money::ZERO,
                status: ShareStatus::Pending,
                fail_reason: None,
                out_order_no: no.clone(),
                retries: 0,
                plan_version: plan.as_ref().map(|p| p.version),
                created_at: now,
                settled_at: None,
                updated_at: now,
                discrepancy: None,
            })
            .collect();
        let sharing = Sharing { payment_id: tx.id, tenant_id: tx.tenant_id, base, rates, unfrozen_at: None, created_at: now };
        match self.repo.begin_sharing(sharing, shares).await {
            Ok(begun) => Ok(Ok(begun)),
            // A refund reserved or settled since its refunds were read: read them again.
            Err(Error::Conflict(Reason::TryAgain, why)) => Ok(Err(why)),
            Err(e) => Err(e),
        }
    }

    /// Step 2 for the shares of request `no`: their receivers added, then the request sent
    /// and its answer recorded. `Some(why)` when the platform could not be reached.
    async fn request_share(
        &self,
        account: &MerchantAccount,
        sub_mchid: &str,
        transaction_id: &str,
        no: &str,
        group: Vec<Share>,
    ) -> Result<Sent> {
        // A retried share adds its receiver afresh: the operator may have fixed it.
        let fresh = group.iter().any(|s| s.retries > 0);
        for share in &group {
            if !fresh && self.added.contains(sub_mchid, &share.receiver) {
                continue;
            }
            let add = ReceiverAdd { receiver: share.receiver.clone(), relation: share.role.into() };
            match self.platform.add_receiver(account, &add).await {
                Ok(()) => self.added.insert(sub_mchid, &share.receiver),
                Err(PayPlatformError::Refused { code, message, .. }) => {
                    let why = format!("the receiver could not be added: {code}: {message}");
                    return Ok(Sent::Recorded(self.close_shares(group, &why).await?));
                }
                Err(e) => return Ok(Sent::Unreachable(e.to_string())),
            }
        }
        failpoint!("sharing.receivers_added");
        let order = ShareOrder {
            transaction_id: transaction_id.to_owned(),
            out_order_no: no.to_owned(),
            lines: group
                .iter()
                .map(|s| ShareLine {
                    kind: s.receiver.kind,
                    account: s.receiver.account.clone(),
                    amount: s.to_pay(),
                    description: SHARE_DESCRIPTION.into(),
                })
                .collect(),
            unfreeze_unsplit: false,
        };
        match self.platform.share(account, &order).await {
            Ok(answer) => {
                failpoint!("sharing.requested");
                let written = self.record_answer(group, &answer).await?;
                failpoint!("sharing.recorded");
                Ok(Sent::Recorded(written))
            }
            // Refused as a whole (over the ratio, a receiver unknown, …): nothing was shared.
            Err(PayPlatformError::Refused { code, message, .. }) => {
                Ok(Sent::Recorded(self.close_shares(group, &format!("{code}: {message}")).await?))
            }
            Err(e) => Ok(Sent::Unreachable(e.to_string())),
        }
    }

    /// Records what the platform reports of the request `group` was sent in.
    async fn record_answer(&self, group: Vec<Share>, answer: &PlatformShareOrder) -> Result<Option<Vec<Share>>> {
        let now = self.clock.now();
        let after = group
            .iter()
            .map(|s| {
                let mut s = s.clone();
                match answer.line_of(&s.receiver).map(|l| (l.result, l)) {
                    Some((ReceiverResult::Success, line)) => {
                        s.status = ShareStatus::Succeeded;
                        s.settled_at = Some(line.finish_time.unwrap_or(now));
                        s.fail_reason = None;
                    }
                    Some((ReceiverResult::Closed, line)) => {
                        s.status = ShareStatus::Closed;
                        s.fail_reason = Some(line.fail_reason.clone().unwrap_or_else(|| "CLOSED".into()));
                    }
                    Some((ReceiverResult::Pending, _)) | None => s.status = ShareStatus::Processing,
                }
                s
            })
            .collect();
        self.record_shares(group, after, Effects::default()).await
    }

    /// Closes the shares of a request the platform refused, with its reason.
    async fn close_shares(&self, group: Vec<Share>, why: &str) -> Result<Option<Vec<Share>>> {
        log::warn!("share request {} refused: {why}", group.first().map(|s| s.out_order_no.as_str()).unwrap_or_default());
        let after = group.iter().map(|s| Share { status: ShareStatus::Closed, fail_reason: Some(why.to_owned()), ..s.clone() }).collect();
        self.record_shares(group, after, Effects::default()).await
    }

    /// Writes `after` over `before` (conditionally on how each was read), with `effects`;
    /// `after` as written when every share was, `None` when another runner changed one first.
    async fn record_shares(&self, before: Vec<Share>, after: Vec<Share>, effects: Effects) -> Result<Option<Vec<Share>>> {
        let now = self.clock.now();
        let read = before.iter().map(|s| (s.status, s.out_order_no.clone())).collect();
        let changed: Vec<Share> = after.into_iter().map(|s| Share { updated_at: now, ..s }).collect();
        let written = self.repo.update_shares(changed.clone(), read, effects).await?;
        Ok((written == changed.len() as u64).then_some(changed))
    }

    /// Reads the transaction's shares again if another runner changed one under this run.
    async fn refresh(&self, book: &mut Book, payment_id: Id) -> Result<()> {
        if book.stale
            && let Some((_, shares)) = self.repo.sharing(payment_id).await?
        {
            *book = Book { shares, stale: false };
        }
        Ok(())
    }

    /// `GET /miniprogram/payment/shares`: the shares in the caller's scope, newest first.
    pub async fn list_shares(&self, actor: &Actor, query: ShareQuery) -> Result<Page<ShareView>> {
        Ok(self.repo.list_shares(actor.party, query).await?.map(ShareView::from))
    }

    /// `POST /miniprogram/payment/shares/{id}/retry`: a `closed` share is requested again under
    /// a new number (the platform answers a number it knows with its old result), its receiver
    /// added afresh, less what refunds made while it was closed took of it; 409 for a share in
    /// any other status, one holding a discrepancy, or while a refund of its payment is
    /// processing.
    pub async fn retry_share(&self, actor: &Actor, id: Id) -> Result<ShareView> {
        let share = self.repo.get_share(actor.party, id).await?.ok_or(Error::NotFound("share"))?;
        if let Some(why) = &share.discrepancy {
            return Err(Error::conflict(
                Reason::Discrepancy,
                format!("the pay platform's record of this share differs from ours ({why}); it is not retried until that is resolved"),
            ));
        }
        if share.status != ShareStatus::Closed {
            let status: &str = share.status.into();
            return Err(Error::conflict(Reason::State, format!("only a closed share can be retried; this one is {status}")));
        }
        let now = self.clock.now();
        let no = retry_order_no(&share_order_no(share.payment_id), share.id, share.retries + 1);
        let audit = AuditRecord::by(actor, now, "share.retry", "payment_share", Some(share.id))
            .owned_by(share.partner_id, Some(share.tenant_id))
            .with_after(serde_json::json!({
                "out_trade_no": share.out_trade_no,
                "closed_as": share.out_order_no,
                "fail_reason": share.fail_reason,
                "out_order_no": no,
            }));
        let job = self.share_job_now(share.tenant_id, &share.out_trade_no, &format!("retry:{no}"));
        let effects = Effects { jobs: vec![job], audit: Some(audit), events: Vec::new() };
        match self.repo.retry_share(share, no, now, effects).await {
            Ok(Some(retried)) => Ok(retried.into()),
            Ok(None) => Err(Error::conflict(Reason::TryAgain, "the share changed meanwhile; reload it")),
            Err(Error::Conflict(Reason::TryAgain, _)) => {
                Err(Error::conflict(Reason::TryAgain, "a refund of the payment is processing; retry the share once it settled"))
            }
            Err(e) => Err(e),
        }
    }

    /// A profit-sharing notification: the transaction's sharing job runs now, which settles
    /// the request by querying it.
    pub(super) async fn share_notified(&self, tenant_id: Id, out_order_no: &str) -> Result<bool> {
        let Some(share) = self.repo.shares_in_order(tenant_id, out_order_no.to_owned()).await?.into_iter().next() else {
            log::warn!("profit-sharing notification for unknown out_order_no {out_order_no} of tenant {tenant_id}");
            return Ok(false);
        };
        self.jobs.enqueue(self.share_job_now(tenant_id, &share.out_trade_no, &format!("notified:{out_order_no}"))).await?;
        Ok(true)
    }
}

/// Whether `tx` is shared: a sub-merchant's platform payment, paid as reported.
fn shared(tx: &Transaction) -> bool {
    tx.sub_mchid.is_some() && tx.method != PaymentMethod::Offline && tx.is_paid() && tx.discrepancy.is_none()
}

/// What became of a share request.
enum Sent {
    /// The platform could not be reached: try again later, for this reason.
    Unreachable(String),
    /// Its answer (or refusal) was recorded: the shares as written, `None` if another runner
    /// wrote one first.
    Recorded(Option<Vec<Share>>),
}

/// A transaction's shares as one run knows them: kept up to date by the run's own writes, and
/// read again (`stale`) only after a write another runner beat.
struct Book {
    shares: Vec<Share>,
    stale: bool,
}

impl Book {
    fn take(&mut self, written: Option<Vec<Share>>) {
        match written {
            Some(after) => {
                for share in after {
                    if let Some(known) = self.shares.iter_mut().find(|s| s.id == share.id) {
                        *known = share;
                    }
                }
            }
            None => self.stale = true,
        }
    }
}

/// The shares in `status`, by the request number they go under.
fn by_order_no(shares: &[Share], status: ShareStatus) -> BTreeMap<String, Vec<Share>> {
    let mut groups: BTreeMap<String, Vec<Share>> = BTreeMap::new();
    for s in shares.iter().filter(|s| s.status == status) {
        groups.entry(s.out_order_no.clone()).or_default().push(s.clone());
    }
    groups
}
