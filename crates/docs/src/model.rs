//! What the document domain stores and reasons about: owners, projects, documents and their
//! tree, and API tokens with what they reach.
use atrium_kernel::{Id, Party, PartyType, Timestamp};

/// The party a project or token belongs to: the platform, one partner or one tenant.
/// Unlike [`Party`] it carries no tenant's partner: ownership is by the party itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Owner {
    party_type: PartyType,
    party_id: Option<Id>,
}

impl Owner {
    /// The platform operator (what the CLI creates for).
    pub const PLATFORM: Owner = Owner { party_type: PartyType::Platform, party_id: None };

    /// Rebuilds an owner from stored parts; `None` if they do not fit (a platform with an
    /// id, a partner or tenant without one).
    pub fn from_parts(party_type: PartyType, party_id: Option<Id>) -> Option<Owner> {
        match (party_type, party_id) {
            (PartyType::Platform, None) => Some(Owner::PLATFORM),
            (PartyType::Partner | PartyType::Tenant, Some(id)) => Some(Owner { party_type, party_id: Some(id) }),
            _ => None,
        }
    }

    pub fn party_type(&self) -> PartyType {
        self.party_type
    }

    /// The party's id (`None` for the platform).
    pub fn party_id(&self) -> Option<Id> {
        self.party_id
    }
}

/// `the platform`, `partner 3`, `tenant 12`: for log lines and messages.
impl std::fmt::Display for Owner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (self.party_type, self.party_id) {
            (PartyType::Platform, _) => f.write_str("the platform"),
            (PartyType::Partner, Some(id)) => write!(f, "partner {id}"),
            (PartyType::Tenant, Some(id)) => write!(f, "tenant {id}"),
            (PartyType::Partner, None) => f.write_str("a partner"),
            (PartyType::Tenant, None) => f.write_str("a tenant"),
        }
    }
}

impl From<Party> for Owner {
    fn from(p: Party) -> Self {
        Owner { party_type: p.party_type(), party_id: p.id() }
    }
}

/// A document collection.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    pub id: Id,
    pub name: String,
    pub owner: Owner,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewProject {
    pub name: String,
    pub owner: Owner,
    pub at: Timestamp,
}

/// A Markdown document in a project, optionally below a parent document of the same project.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    pub id: Id,
    pub project_id: Id,
    pub parent_id: Option<Id>,
    pub name: String,
    pub content: String,
    pub sort: i64,
    /// 0 for a root, the parent's depth + 1 otherwise.
    pub depth: i32,
    /// The API token that created it.
    pub author_token_id: Option<Id>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    pub project_id: Id,
    pub parent_id: Option<Id>,
    pub name: String,
    pub content: String,
    pub sort: i64,
    pub depth: i32,
    pub author_token_id: Option<Id>,
    pub at: Timestamp,
}

/// A document without its content, as listed for a project's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSummary {
    pub id: Id,
    pub parent_id: Option<Id>,
    pub name: String,
    pub sort: i64,
    pub depth: i32,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// One node of a project's document tree; `children` are ordered by sort, then id.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentNode {
    pub doc: DocumentSummary,
    pub children: Vec<DocumentNode>,
}

/// A project's documents arranged as a tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentTree {
    pub project: Project,
    /// How many documents the tree holds, at every level.
    pub total: usize,
    pub roots: Vec<DocumentNode>,
}

/// Which projects of its owner a token reaches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProjectGrant {
    /// Every project of the owner, present and future.
    All,
    /// Only these (sorted, without duplicates).
    Only(Vec<Id>),
}

impl ProjectGrant {
    pub fn includes(&self, project_id: Id) -> bool {
        match self {
            ProjectGrant::All => true,
            ProjectGrant::Only(ids) => ids.binary_search(&project_id).is_ok(),
        }
    }

    /// The listed ids, `None` for all projects.
    pub fn ids(&self) -> Option<&[Id]> {
        match self {
            ProjectGrant::All => None,
            ProjectGrant::Only(ids) => Some(ids),
        }
    }
}

/// An API token as stored: never its value, only what describes and limits it.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiToken {
    pub id: Id,
    pub name: String,
    pub owner: Owner,
    pub projects: ProjectGrant,
    /// The user who issued it (`None` when issued from the CLI).
    pub created_by: Option<Id>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
    pub last_used_at: Option<Timestamp>,
    /// Why a live token cannot be used now: its owning party (or that tenant's partner) is
    /// disabled, or the user who issued it is disabled or gone. Filled when the token is
    /// looked up to authenticate.
    pub suspended: Option<String>,
}

/// Whether a token works right now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, strum::IntoStaticStr, strum::EnumString)]
#[strum(serialize_all = "snake_case")]
pub enum TokenStatus {
    Active,
    Expired,
    Revoked,
    /// Live, but its party or issuer is disabled.
    Suspended,
}

impl ApiToken {
    pub fn status(&self, now: Timestamp) -> TokenStatus {
        if self.revoked_at.is_some() {
            TokenStatus::Revoked
        } else if self.expires_at.is_some_and(|e| e <= now) {
            TokenStatus::Expired
        } else if self.suspended.is_some() {
            TokenStatus::Suspended
        } else {
            TokenStatus::Active
        }
    }
}

/// What a new token row holds: the hash of its value, never the value.
#[derive(Debug, Clone, PartialEq)]
pub struct NewToken {
    pub name: String,
    pub token_hash: String,
    pub owner: Owner,
    pub projects: ProjectGrant,
    pub created_by: Option<Id>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
}

/// A freshly issued token: the only time its value exists outside the client.
pub struct IssuedToken {
    pub token: ApiToken,
    pub secret: String,
}

impl std::fmt::Debug for IssuedToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuedToken").field("token", &self.token).field("secret", &"***").finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_owner_is_named_in_words() {
        assert_eq!(Owner::PLATFORM.to_string(), "the platform");
        assert_eq!(Owner::from_parts(PartyType::Partner, Some(3)).map(|o| o.to_string()).as_deref(), Some("partner 3"));
        assert_eq!(Owner::from_parts(PartyType::Tenant, Some(12)).map(|o| o.to_string()).as_deref(), Some("tenant 12"));
    }
}
