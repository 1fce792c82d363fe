//! Statements: what a partner or the platform earned from sub-merchant payments
//! ([`crate::earnings`]).
use super::payments::PaymentService;
use crate::api::{EarningsParams, EarningsView};
use crate::earnings::{Earner, Earnings, MAX_STATEMENT_DAYS};
use atrium_kernel::{Actor, Error, Id, Party, Reason, Result};

impl PaymentService {
    /// `GET /partners/{id}/earnings`: the partner's commission. The platform reads any
    /// partner's, a partner its own; anyone else gets 404.
    pub async fn partner_earnings(&self, actor: &Actor, partner_id: Id, params: EarningsParams) -> Result<EarningsView> {
        if !self.repo.partner(actor.party, partner_id).await? {
            return Err(Error::NotFound("partner"));
        }
        self.earnings(Earner::Partner(partner_id), params).await
    }

    /// `GET /platform/earnings`: the platform's share (platform users only).
    pub async fn platform_earnings(&self, actor: &Actor, params: EarningsParams) -> Result<EarningsView> {
        if actor.party != Party::Platform {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users read the platform's earnings"));
        }
        self.earnings(Earner::Platform, params).await
    }

    async fn earnings(&self, earner: Earner, params: EarningsParams) -> Result<EarningsView> {
        let EarningsParams { from, to, group } = params;
        if to < from {
            return Err(Error::invalid("to", "must not be before from"));
        }
        if (to - from).num_days() >= MAX_STATEMENT_DAYS {
            return Err(Error::invalid("to", format!("a statement covers at most {MAX_STATEMENT_DAYS} days")));
        }
        let rows = self.repo.earnings(earner, from, to, group).await?;
        Ok(EarningsView::of(Earnings::of(rows), from, to, group))
    }
}
