//! Partners (agents): resellers that bring tenants to the platform.
use async_trait::async_trait;
use atrium_kernel::{Actor, AuditRecord, Clock, Email, Error, Id, Label, Name, Page, Party, Phone, Result, Timestamp, patch};
use serde::{Deserialize, Serialize};
use std::sync::Arc;

use crate::scope::ListQuery;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum PartnerStatus {
    Active,
    Disabled,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Partner {
    pub id: Id,
    pub name: String,
    pub contact_name: Option<String>,
    pub phone: Option<String>,
    pub email: Option<String>,
    pub status: PartnerStatus,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub created_at: Timestamp,
    #[cfg_attr(feature = "openapi", schema(value_type = String, format = DateTime))]
    pub updated_at: Timestamp,
}

/// `POST /partners` body.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct NewPartner {
    pub name: Name,
    pub contact_name: Option<Label>,
    pub phone: Option<Phone>,
    pub email: Option<Email>,
    pub status: Option<PartnerStatus>,
}

/// `PUT /partners/:id` body: absent fields stay, `null` clears an optional one.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PartnerPatch {
    pub name: Option<Name>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub contact_name: Option<Option<Label>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub phone: Option<Option<Phone>>,
    #[serde(default, deserialize_with = "patch")]
    #[cfg_attr(feature = "openapi", schema(value_type = Option<String>))]
    pub email: Option<Option<Email>>,
    pub status: Option<PartnerStatus>,
}

#[derive(Debug, Clone, Default)]
pub struct PartnerQuery {
    pub list: ListQuery<PartnerSort>,
    pub status: Option<PartnerStatus>,
}

/// What a list of these may be sorted by (`sort=name`, `sort=-created_at`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::IntoStaticStr, strum::VariantNames)]
#[strum(serialize_all = "snake_case")]
pub enum PartnerSort {
    Id,
    CreatedAt,
    Name,
}

/// Storage of partners. Every read is filtered by `scope`; out-of-scope rows are absent.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
#[async_trait]
pub trait PartnerRepo: Send + Sync + 'static {
    async fn list_partners(&self, scope: Party, query: PartnerQuery) -> Result<Page<Partner>>;
    async fn get_partner(&self, scope: Party, id: Id) -> Result<Option<Partner>>;
    /// Inserts `partner` (its `id` is ignored) and `audit` (its `target_id` set) atomically.
    async fn insert_partner(&self, partner: Partner, audit: AuditRecord) -> Result<Partner>;
    /// Saves every field of `partner` and `audit` atomically.
    async fn update_partner(&self, partner: Partner, audit: AuditRecord) -> Result<Partner>;
    /// Deletes the partner. Unless `cascade`, MUST return `Conflict` while tenants or users
    /// belong to it; with `cascade` removes them (and what belongs to those tenants) too.
    /// Returns the ids of users deleted.
    async fn delete_partner(&self, id: Id, cascade: bool, audit: AuditRecord) -> Result<Vec<Id>>;
}

pub struct PartnerService {
    repo: Arc<dyn PartnerRepo>,
    access: Arc<dyn crate::AccessChanged>,
    clock: Arc<dyn Clock>,
}

fn audit_json(p: &Partner) -> serde_json::Value {
    serde_json::to_value(p).unwrap_or_default()
}

impl PartnerService {
    pub fn new(repo: Arc<dyn PartnerRepo>, access: Arc<dyn crate::AccessChanged>, clock: Arc<dyn Clock>) -> Self {
        PartnerService { repo, access, clock }
    }

    pub async fn list(&self, actor: &Actor, query: PartnerQuery) -> Result<Page<Partner>> {
        self.repo.list_partners(actor.party, query).await
    }

    pub async fn get(&self, actor: &Actor, id: Id) -> Result<Partner> {
        self.repo.get_partner(actor.party, id).await?.ok_or(Error::NotFound("partner"))
    }

    pub async fn create(&self, actor: &Actor, input: NewPartner) -> Result<Partner> {
        if actor.party != Party::Platform {
            return Err(Error::forbidden("only platform users can create partners"));
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
        self.repo.insert_partner(partner, audit).await
    }

    pub async fn update(&self, actor: &Actor, id: Id, patch: PartnerPatch) -> Result<Partner> {
        let before = self.get(actor, id).await?;
        if actor.party != Party::Platform && patch.status.is_some_and(|s| s != before.status) {
            return Err(Error::forbidden("only platform users can change a partner's status"));
        }
        let mut after = before.clone();
        if let Some(name) = patch.name {
            after.name = name.into_string();
        }
        if let Some(v) = patch.contact_name {
            after.contact_name = v.map(Label::into_string);
        }
        if let Some(v) = patch.phone {
            after.phone = v.map(String::from);
        }
        if let Some(v) = patch.email {
            after.email = v.map(String::from);
        }
        if let Some(s) = patch.status {
            after.status = s;
        }
        after.updated_at = self.clock.now();
        let action = if after.status != before.status { "partner.status" } else { "partner.update" };
        let audit = AuditRecord::by(actor, after.updated_at, action, "partner", Some(id))
            .owned_by(Some(id), None)
            .change(Some(&audit_json(&before)), Some(&audit_json(&after)));
        let status_changed = after.status != before.status;
        let saved = self.repo.update_partner(after, audit).await?;
        if status_changed {
            self.access.party_changed();
        }
        Ok(saved)
    }

    pub async fn delete(&self, actor: &Actor, id: Id, cascade: bool) -> Result<()> {
        let before = self.get(actor, id).await?;
        if actor.party != Party::Platform {
            return Err(Error::forbidden("only platform users can delete partners"));
        }
        let audit = AuditRecord::by(actor, self.clock.now(), "partner.delete", "partner", Some(id))
            .owned_by(Some(id), None)
            .change(Some(&audit_json(&before)), None);
        let users = self.repo.delete_partner(id, cascade, audit).await?;
        for u in users {
            self.access.user_access_changed(u);
        }
        Ok(())
    }
}
