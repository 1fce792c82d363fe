//! Partners (agents): only platform users create, delete or change the status of one.
use atrium_kernel::Reason;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Label, Name, Page, Party, Result};
use std::convert::identity;
use std::sync::Arc;

use super::{apply, audit_json};
use crate::api::{NewPartner, PartnerPatch};
use crate::model::{Partner, PartnerQuery, PartnerStatus};
use crate::ports::{AccessChanged, PartnerRepo};

/// The partner use cases, scoped to the caller: platform users manage every partner, partner
/// users read and edit their own (not its status), tenant users see none.
pub struct PartnerService {
    repo: Arc<dyn PartnerRepo>,
    access: Arc<dyn AccessChanged>,
    clock: Arc<dyn Clock>,
}

impl PartnerService {
    /// A service over partner storage, the session caches to tell of access changes, and a clock.
    pub fn new(repo: Arc<dyn PartnerRepo>, access: Arc<dyn AccessChanged>, clock: Arc<dyn Clock>) -> Self {
        PartnerService { repo, access, clock }
    }

    /// One page of the partners in the caller's scope that match `query`.
    pub async fn list(&self, actor: &Actor, query: PartnerQuery) -> Result<Page<Partner>> {
        self.repo.list_partners(actor.party, query).await
    }

    /// A partner in the caller's scope; `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Partner> {
        self.repo.get_partner(actor.party, id).await?.ok_or(Error::NotFound("partner"))
    }

    /// Creates a partner; platform users only (`Forbidden` otherwise).
    pub async fn create(&self, actor: &Actor, input: NewPartner) -> Result<Partner> {
        if actor.party != Party::Platform {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users can create partners"));
        }
        let now = self.clock.now();
        let partner = Partner {
            id: 0,
            name: input.name.into_string(),
            contact_name: input.contact_name.map(Label::into_string),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            status: input.status.unwrap_or(PartnerStatus::Active),
            created_at: now,
            updated_at: now,
        };
        let audit = AuditRecord::by(actor, now, "partner.create", "partner", None).change(None, Some(&audit_json(&partner)));
        self.repo.insert_partner(partner, Effects::audited(audit)).await
    }

    /// Changes a partner in the caller's scope; only platform users change its status, which ends
    /// the cached sessions of its users and its tenants' users at once.
    pub async fn update(&self, actor: &Actor, id: Id, patch: PartnerPatch) -> Result<Partner> {
        let before = self.get(actor, id).await?;
        if actor.party != Party::Platform && patch.status.is_some_and(|s| s != before.status) {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users can change a partner's status"));
        }
        let mut after = before.clone();
        apply(&mut after.name, patch.name, Name::into_string);
        apply(&mut after.contact_name, patch.contact_name, |v| v.map(Label::into_string));
        apply(&mut after.phone, patch.phone, |v| v.map(String::from));
        apply(&mut after.email, patch.email, |v| v.map(String::from));
        apply(&mut after.status, patch.status, identity);
        after.updated_at = self.clock.now();
        let action = if after.status != before.status { "partner.status" } else { "partner.update" };
        let audit = AuditRecord::by(actor, after.updated_at, action, "partner", Some(id))
            .owned_by(Some(id), None)
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let status_changed = after.status != before.status;
        let saved = self.repo.update_partner(after, Effects::audited(audit)).await?;
        if status_changed {
            self.access.party_changed();
        }
        Ok(saved)
    }

    /// Deletes a partner (platform users only): a `Conflict` while tenants or users belong to it,
    /// unless `cascade`, which removes them too and ends those users' sessions.
    pub async fn delete(&self, actor: &Actor, id: Id, cascade: bool) -> Result<()> {
        let before = self.get(actor, id).await?;
        if actor.party != Party::Platform {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users can delete partners"));
        }
        let audit = AuditRecord::by(actor, self.clock.now(), "partner.delete", "partner", Some(id))
            .owned_by(Some(id), None)
            .change(Some(&audit_json(&before)), None);
        let users = self.repo.delete_partner(id, cascade, Effects::audited(audit)).await?;
        for u in users {
            self.access.user_access_changed(u);
        }
        Ok(())
    }
}
