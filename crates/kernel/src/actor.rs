use crate::Reason;
use crate::{Error, Id};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Which kind of party a user belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum PartyType {
    /// The platform operator, which sees every partner and tenant.
    Platform,
    /// A partner (agent), which manages the tenants it brought.
    Partner,
    /// A tenant (enterprise), which sees only its own records.
    Tenant,
}

/// Whether a user may log in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum UserStatus {
    /// The user may log in.
    Active,
    /// The user may not log in; its sessions end.
    Disabled,
}

/// The party a user belongs to: the platform operator, one partner, or one tenant.
/// A tenant party also carries its partner (if any), so scope checks need no lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Party {
    /// The platform operator.
    Platform,
    /// A partner, by its id.
    Partner {
        /// The partner's id.
        partner_id: Id,
    },
    /// A tenant, by its id, with its partner if one brought it.
    Tenant {
        /// The tenant's id.
        tenant_id: Id,
        /// The partner the tenant belongs to; `None` for a tenant of the platform's own.
        partner_id: Option<Id>,
    },
}

impl Party {
    /// Which kind of party this is, without its ids.
    pub fn party_type(&self) -> PartyType {
        match self {
            Party::Platform => PartyType::Platform,
            Party::Partner { .. } => PartyType::Partner,
            Party::Tenant { .. } => PartyType::Tenant,
        }
    }

    /// The party's own id (`None` for the platform).
    pub fn id(&self) -> Option<Id> {
        match self {
            Party::Platform => None,
            Party::Partner { partner_id } => Some(*partner_id),
            Party::Tenant { tenant_id, .. } => Some(*tenant_id),
        }
    }

    /// The partner of the party: a partner's own id, a tenant's partner (if any).
    pub fn partner_id(&self) -> Option<Id> {
        match self {
            Party::Platform => None,
            Party::Partner { partner_id } => Some(*partner_id),
            Party::Tenant { partner_id, .. } => *partner_id,
        }
    }

    /// A tenant party's tenant id.
    pub fn tenant_id(&self) -> Option<Id> {
        match self {
            Party::Tenant { tenant_id, .. } => Some(*tenant_id),
            _ => None,
        }
    }

    /// The tenant a new tenant-owned record goes to: a tenant user's own (naming another is
    /// "no such tenant"), else the `requested` one, which platform and partner users must give.
    /// Whether that tenant is in scope is the repository's check.
    pub fn tenant_for_new(&self, requested: Option<Id>) -> Result<Id, Error> {
        match (*self, requested) {
            (Party::Tenant { tenant_id, .. }, None) => Ok(tenant_id),
            (Party::Tenant { tenant_id, .. }, Some(t)) if t == tenant_id => Ok(t),
            (Party::Tenant { .. }, Some(_)) => Err(Error::no_such("tenant_id", "no such tenant")),
            (_, None) => Err(Error::invalid("tenant_id", "is required")),
            (_, Some(t)) => Ok(t),
        }
    }

    /// Whether a record owned by `tenant_id` (whose partner is `tenant_partner`) is visible.
    pub fn sees_tenant(&self, tenant_id: Id, tenant_partner: Option<Id>) -> bool {
        match self {
            Party::Platform => true,
            Party::Partner { partner_id } => tenant_partner == Some(*partner_id),
            Party::Tenant { tenant_id: own, .. } => *own == tenant_id,
        }
    }

    /// Whether a partner record is visible.
    pub fn sees_partner(&self, partner_id: Id) -> bool {
        match self {
            Party::Platform => true,
            Party::Partner { partner_id: own } => *own == partner_id,
            Party::Tenant { .. } => false,
        }
    }
}

/// Serialises as its [`PartyView`]: `{"type": "tenant", "id": 7}`.
impl Serialize for Party {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        PartyView::from(*self).serialize(s)
    }
}

/// The party a user belongs to: `{"type": "tenant", "id": 7}` (`id` null for the platform).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PartyView {
    /// `platform`, `partner` or `tenant`.
    #[serde(rename = "type")]
    pub party_type: PartyType,
    /// The partner's or tenant's id; null for the platform.
    pub id: Option<i64>,
}

impl From<Party> for PartyView {
    fn from(p: Party) -> Self {
        PartyView { party_type: p.party_type(), id: p.id() }
    }
}

/// Whether a granted permission string covers a required one.
/// `*` covers everything; `resource:*` covers every action on that resource.
pub fn permission_matches(granted: &str, required: &str) -> bool {
    if granted == "*" || granted == required {
        return true;
    }
    match (granted.strip_suffix(":*"), required.split_once(':')) {
        (Some(resource), Some((req_resource, _))) => resource == req_resource,
        _ => false,
    }
}

/// A user's effective permission strings (the union over its roles).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PermissionSet(BTreeSet<String>);

impl PermissionSet {
    /// A set of the given permission strings (`user:read`, `payroll:*`, …); duplicates count once.
    pub fn new<I, S>(perms: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        PermissionSet(perms.into_iter().map(Into::into).collect())
    }

    /// Whether some permission of the set grants `required`, a `resource:*` wildcard granting
    /// every action on its resource.
    pub fn allows(&self, required: &str) -> bool {
        self.0.iter().any(|g| permission_matches(g, required))
    }

    /// Whether every permission of `other` is covered here (used when granting roles).
    pub fn covers_all<'a>(&self, other: impl IntoIterator<Item = &'a str>) -> bool {
        other.into_iter().all(|p| self.allows(p))
    }

    /// The permission strings, in sorted order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// The permission strings, sorted, as owned strings (for views and tokens).
    pub fn to_vec(&self) -> Vec<String> {
        self.0.iter().cloned().collect()
    }
}

/// Whether a user's party lets its users and API tokens in. Partners and tenants can be
/// disabled; a tenant is also shut out when its partner is; a self-registered tenant is
/// `Pending` until activated, and may look but not grow (no new users).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PartyStanding {
    /// The party is active: its users may do everything their roles allow.
    #[default]
    Active,
    /// A self-registered tenant awaiting activation: its users may look but not grow it.
    Pending,
    /// The party itself is disabled or gone.
    Disabled(PartyType),
    /// The tenant is fine but its partner is disabled.
    PartnerDisabled,
}

impl PartyStanding {
    /// Why this standing refuses `holder` ("this account", "this token"), or `None` when it
    /// lets the party in.
    pub fn refusal(self, holder: &str) -> Option<String> {
        match self {
            PartyStanding::Active | PartyStanding::Pending => None,
            PartyStanding::Disabled(PartyType::Tenant) => Some(format!("the tenant {holder} belongs to is disabled")),
            PartyStanding::Disabled(_) => Some(format!("the partner {holder} belongs to is disabled")),
            PartyStanding::PartnerDisabled => Some(format!("the partner of the tenant {holder} belongs to is disabled")),
        }
    }

    /// `active` or `pending` (the only standings a logged-in caller can have), else `disabled`.
    pub fn as_str(self) -> &'static str {
        match self {
            PartyStanding::Active => "active",
            PartyStanding::Pending => "pending",
            PartyStanding::Disabled(_) | PartyStanding::PartnerDisabled => "disabled",
        }
    }

    /// `Forbidden`, saying why, when the standing refuses a user's access.
    pub fn check(self) -> Result<(), Error> {
        match self.refusal("this account") {
            Some(why) => Err(Error::Forbidden(Reason::PartyInactive, why)),
            None => Ok(()),
        }
    }
}

/// The authenticated caller of a domain operation.
#[derive(Debug, Clone)]
pub struct Actor {
    /// The calling user's id.
    pub user_id: Id,
    /// The session the request came with (for logs and for ending it).
    pub session_id: String,
    /// The party the user belongs to, which scopes everything the actor sees.
    pub party: Party,
    /// Whether the caller's party is active or still pending (a disabled one never acts).
    pub standing: PartyStanding,
    /// The union of the permissions of the user's roles.
    pub permissions: PermissionSet,
    /// Client address and request id, for the audit trail.
    pub ip: Option<String>,
    /// The request's id, for the audit trail and the logs.
    pub request_id: Option<String>,
}

impl Actor {
    /// A caller of an active party holding `permissions`, as a service embedding the domain
    /// crates (or a test) acts: no client address or request id until set.
    pub fn new<I, S>(user_id: Id, session_id: impl Into<String>, party: Party, permissions: I) -> Actor
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Actor {
            user_id,
            session_id: session_id.into(),
            party,
            standing: PartyStanding::Active,
            permissions: PermissionSet::new(permissions),
            ip: None,
            request_id: None,
        }
    }

    /// `Forbidden` unless the actor holds `permission`.
    pub fn require(&self, permission: &str) -> Result<(), Error> {
        if self.permissions.allows(permission) {
            Ok(())
        } else {
            Err(Error::Forbidden(Reason::MissingPermission, format!("missing permission {permission}")))
        }
    }

    /// `Forbidden` while the caller's tenant awaits activation (for operations that grow it).
    pub fn require_active_party(&self, what: &str) -> Result<(), Error> {
        if self.standing == PartyStanding::Pending {
            return Err(Error::Forbidden(Reason::PartyInactive, format!("a tenant awaiting activation cannot {what}")));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_record_goes_to_the_tenant_users_own_tenant_or_the_named_one() {
        let tenant = Party::Tenant { tenant_id: 5, partner_id: Some(2) };
        assert_eq!(tenant.tenant_for_new(None).unwrap(), 5);
        assert_eq!(tenant.tenant_for_new(Some(5)).unwrap(), 5);
        assert!(matches!(tenant.tenant_for_new(Some(6)), Err(Error::NoSuch(ref f)) if f.field == "tenant_id"));
        assert_eq!(Party::Partner { partner_id: 2 }.tenant_for_new(Some(6)).unwrap(), 6);
        assert!(matches!(Party::Platform.tenant_for_new(None), Err(Error::Invalid(ref f)) if f[0].message == "is required"));
    }

    #[test]
    fn star_grants_everything() {
        assert!(permission_matches("*", "payroll:approve"));
    }

    #[test]
    fn resource_wildcard_grants_only_that_resource() {
        assert!(permission_matches("user:*", "user:delete"));
        assert!(!permission_matches("user:*", "users:delete"));
        assert!(!permission_matches("user:*", "tenant:read"));
    }

    #[test]
    fn exact_permission_does_not_grant_siblings() {
        assert!(permission_matches("user:read", "user:read"));
        assert!(!permission_matches("user:read", "user:update"));
        assert!(!permission_matches("user:read", "user:*"));
    }

    #[test]
    fn partner_sees_only_its_own_tenants() {
        let p = Party::Partner { partner_id: 7 };
        assert!(p.sees_tenant(1, Some(7)));
        assert!(!p.sees_tenant(1, Some(8)));
        assert!(!p.sees_tenant(1, None));
        assert!(!p.sees_partner(8));
    }

    #[test]
    fn tenant_sees_only_itself() {
        let t = Party::Tenant { tenant_id: 3, partner_id: Some(7) };
        assert!(t.sees_tenant(3, Some(7)));
        assert!(!t.sees_tenant(4, Some(7)));
        assert!(!t.sees_partner(7));
    }

    #[test]
    fn covers_all_requires_every_permission() {
        let set = PermissionSet::new(["user:*", "tenant:read"]);
        assert!(set.covers_all(["user:create", "tenant:read"]));
        assert!(!set.covers_all(["user:create", "tenant:update"]));
    }
}
