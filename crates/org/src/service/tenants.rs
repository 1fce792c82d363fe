//! Tenants (enterprises): created under the caller's partner; only the platform moves one to
//! another partner, and a tenant never changes its own status.
use atrium_kernel::Reason;
use atrium_kernel::{Actor, AuditRecord, Clock, Effects, Error, Id, Label, Name, Page, Party, Result};
use std::sync::Arc;

use super::{apply, audit_json};
use crate::api::{NewTenant, TenantPatch};
use crate::model::{Tenant, TenantQuery, TenantStatus};
use crate::ports::{AccessChanged, TenantRepo};

/// The tenant use cases, scoped to the caller: platform users manage every tenant, partner users
/// their own tenants, tenant users read and edit their own tenant (not its status or partner).
pub struct TenantService {
    repo: Arc<dyn TenantRepo>,
    access: Arc<dyn AccessChanged>,
    clock: Arc<dyn Clock>,
}

/// The partner a caller may act for when it names `requested` (or none): platform callers
/// may name any, partner callers only their own.
fn partner_in_scope(scope: Party, requested: Option<Id>) -> Result<Option<Id>> {
    match (scope, requested) {
        (Party::Platform, r) => Ok(r),
        (Party::Partner { partner_id }, None) => Ok(Some(partner_id)),
        (Party::Partner { partner_id }, Some(r)) if r == partner_id => Ok(Some(r)),
        (Party::Partner { .. }, Some(_)) => Err(Error::no_such("partner_id", "no such partner")),
        (Party::Tenant { .. }, _) => Err(Error::forbidden(Reason::PartyNotAllowed, "tenant users cannot act for a partner")),
    }
}

impl TenantService {
    /// A service over tenant storage, the session caches to tell of access changes, and a clock.
    pub fn new(repo: Arc<dyn TenantRepo>, access: Arc<dyn AccessChanged>, clock: Arc<dyn Clock>) -> Self {
        TenantService { repo, access, clock }
    }
    /// One page of the tenants in the caller's scope that match `query`.
    pub async fn list(&self, actor: &Actor, query: TenantQuery) -> Result<Page<Tenant>> {
        self.repo.list_tenants(actor.party, query).await
    }

    /// A tenant in the caller's scope; `NotFound` for any other.
    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Tenant> {
        self.repo.get_tenant(actor.party, id).await?.ok_or(Error::NotFound("tenant"))
    }

    async fn check_partner(&self, actor: &Actor, requested: Option<Id>) -> Result<Option<Id>> {
        let partner = partner_in_scope(actor.party, requested)?;
        if let Some(p) = partner
            && !self.repo.partner_exists(p).await?
        {
            return Err(Error::no_such("partner_id", "no such partner"));
        }
        Ok(partner)
    }

    /// Creates a tenant, under the caller's own partner for a partner user; tenant users may not
    /// (`Forbidden`). An invalid payroll policy is `Invalid`; a used credit code a `Conflict`.
    pub async fn create(&self, actor: &Actor, input: NewTenant) -> Result<Tenant> {
        let partner_id = self.check_partner(actor, input.partner_id).await?;
        let policy = input.payroll_policy.unwrap_or_default();
        policy.validate()?;
        let now = self.clock.now();
        let tenant = Tenant {
            credit_code: input.credit_code.map(String::from),
            contact_name: input.contact_name.map(Label::into_string),
            phone: input.phone.map(String::from),
            email: input.email.map(String::from),
            status: input.status.unwrap_or(TenantStatus::Active),
            payroll_policy: policy,
            ..Tenant::draft(partner_id, input.name.into_string(), now)
        };
        let audit = AuditRecord::by(actor, now, "tenant.create", "tenant", None)
            .owned_by(partner_id, None)
            .change(None, Some(&audit_json(&tenant)));
        self.repo.insert_tenant(tenant, Effects::audited(audit)).await
    }

    /// Changes a tenant in the caller's scope. Only platform users move it to another partner, and a
    /// tenant never changes its own status; a change of status or partner ends its users' cached
    /// sessions at once.
    pub async fn update(&self, actor: &Actor, id: Id, patch: TenantPatch) -> Result<Tenant> {
        let before = self.get(actor, id).await?;
        let is_tenant_user = matches!(actor.party, Party::Tenant { .. });
        let mut after = before.clone();
        if let Some(p) = patch.partner_id
            && p != before.partner_id
        {
            if actor.party != Party::Platform {
                return Err(Error::forbidden(Reason::PartyNotAllowed, "only platform users can move a tenant to another partner"));
            }
            after.partner_id = self.check_partner(actor, p).await?;
        }
        if let Some(s) = patch.status
            && s != before.status
        {
            if is_tenant_user {
                return Err(Error::forbidden(Reason::PartyNotAllowed, "a tenant cannot change its own status"));
            }
            after.status = s;
        }
        apply(&mut after.name, patch.name, Name::into_string);
        apply(&mut after.credit_code, patch.credit_code, |v| v.map(String::from));
        apply(&mut after.contact_name, patch.contact_name, |v| v.map(Label::into_string));
        apply(&mut after.phone, patch.phone, |v| v.map(String::from));
        apply(&mut after.email, patch.email, |v| v.map(String::from));
        if let Some(policy) = patch.payroll_policy {
            // Four-eyes binds the tenant's own users, so they may turn it on but not off.
            if is_tenant_user && before.payroll_policy.four_eyes && !policy.four_eyes {
                return Err(Error::forbidden(
                    Reason::PartyNotAllowed,
                    "only the tenant's partner or the platform can turn off four-eyes approval",
                ));
            }
            policy.validate()?;
            after.payroll_policy = policy;
        }
        after.updated_at = self.clock.now();
        let action = if after.status != before.status { "tenant.status" } else { "tenant.update" };
        let audit = AuditRecord::by(actor, after.updated_at, action, "tenant", Some(id))
            .owned_by(after.partner_id, Some(id))
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let standing_changed = after.status != before.status || after.partner_id != before.partner_id;
        let saved = self.repo.update_tenant(after, Effects::audited(audit)).await?;
        if standing_changed {
            self.access.party_changed();
        }
        Ok(saved)
    }

    /// Deletes a tenant (platform and partner users): a `Conflict` while employees or users belong to
    /// it, unless `cascade`, which removes them too and ends those users' sessions.
    pub async fn delete(&self, actor: &Actor, id: Id, cascade: bool) -> Result<()> {
        let before = self.get(actor, id).await?;
        if matches!(actor.party, Party::Tenant { .. }) {
            return Err(Error::forbidden(Reason::PartyNotAllowed, "a tenant cannot delete itself"));
        }
        let audit = AuditRecord::by(actor, self.clock.now(), "tenant.delete", "tenant", Some(id))
            .owned_by(before.partner_id, Some(id))
            .change(Some(&audit_json(&before)), None);
        for u in self.repo.delete_tenant(id, cascade, Effects::audited(audit)).await? {
            self.access.user_access_changed(u);
        }
        Ok(())
    }
}
