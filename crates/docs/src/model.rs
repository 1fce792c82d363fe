//! What the document domain stores and reasons about: owners, projects, documents and their
//! tree, and API tokens with what they reach.
use atrium_kernel::{AuditRecord, Id, Party, PartyType, Timestamp};

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

    /// Whether the owner is the platform, a partner or a tenant.
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
    /// The project's id.
    pub id: Id,
    /// Its name, trimmed, as shown in listings.
    pub name: String,
    /// The party it belongs to; only that party's tokens reach it.
    pub owner: Owner,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

/// What a new project row holds; the store assigns the id.
#[derive(Debug, Clone, PartialEq)]
pub struct NewProject {
    /// The checked, trimmed name.
    pub name: String,
    /// The party it will belong to.
    pub owner: Owner,
    /// The creation time, which is also its first update time.
    pub at: Timestamp,
    /// Its audit entry (`doc_project.create`), written with it; the store sets the target id.
    pub audit: AuditRecord,
}

/// A Markdown document in a project, optionally below a parent document of the same project.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The document's id.
    pub id: Id,
    /// The project it belongs to.
    pub project_id: Id,
    /// The parent document in the same project; `None` for a root.
    pub parent_id: Option<Id>,
    /// Its title.
    pub name: String,
    /// The Markdown text.
    pub content: String,
    /// Sort number among its siblings (lower first; ties by id).
    pub sort: i64,
    /// 0 for a root, the parent's depth + 1 otherwise.
    pub depth: i32,
    /// The API token that created it.
    pub author_token_id: Option<Id>,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

/// What a new document row holds; the service has checked the name, size, parent and depth.
#[derive(Debug, Clone, PartialEq)]
pub struct NewDocument {
    /// The project it goes in.
    pub project_id: Id,
    /// Its parent in the same project; `None` for a root.
    pub parent_id: Option<Id>,
    /// The checked, trimmed title.
    pub name: String,
    /// The Markdown text.
    pub content: String,
    /// Sort number among its siblings.
    pub sort: i64,
    /// 0 for a root, the parent's depth + 1 otherwise.
    pub depth: i32,
    /// The API token creating it.
    pub author_token_id: Option<Id>,
    /// The creation time.
    pub at: Timestamp,
}

/// A document without its content, as listed for a project's tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentSummary {
    /// The document's id.
    pub id: Id,
    /// Its parent; `None` for a root.
    pub parent_id: Option<Id>,
    /// Its title.
    pub name: String,
    /// Sort number among its siblings.
    pub sort: i64,
    /// 0 for a root, the parent's depth + 1 otherwise.
    pub depth: i32,
    /// When it was created.
    pub created_at: Timestamp,
    /// When it was last changed.
    pub updated_at: Timestamp,
}

/// One node of a project's document tree; `children` are ordered by sort, then id.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentNode {
    /// The document at this node.
    pub doc: DocumentSummary,
    /// Its child documents, each with theirs.
    pub children: Vec<DocumentNode>,
}

/// A project's documents arranged as a tree.
#[derive(Debug, Clone, PartialEq)]
pub struct DocumentTree {
    /// The project listed.
    pub project: Project,
    /// How many documents the tree holds, at every level.
    pub total: usize,
    /// The documents without a parent, ordered by sort, then id.
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
    /// Whether the token may use project `project_id` (of its own owner).
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
    /// The token's id (not its value, which is never stored).
    pub id: Id,
    /// The label given when it was issued.
    pub name: String,
    /// The party whose projects it reaches.
    pub owner: Owner,
    /// Which of the owner's projects it reaches.
    pub projects: ProjectGrant,
    /// The user who issued it (`None` when issued from the CLI).
    pub created_by: Option<Id>,
    /// When it was issued.
    pub created_at: Timestamp,
    /// When it stops working; `None` for never.
    pub expires_at: Option<Timestamp>,
    /// When it was revoked; `None` while it is not.
    pub revoked_at: Option<Timestamp>,
    /// When it last authenticated a request, recorded at most once per `touch_interval`.
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
    /// Usable: not revoked, not expired, not suspended.
    Active,
    /// Past its `expires_at`.
    Expired,
    /// Revoked by its owner; revocation wins over every other status.
    Revoked,
    /// Live, but its party or issuer is disabled.
    Suspended,
}

impl ApiToken {
    /// The token's status at `now`: revoked first, then expired, then suspended, else active.
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
    /// The checked, trimmed label.
    pub name: String,
    /// SHA-256 of the token's value ([`hash_token`](crate::hash_token)).
    pub token_hash: String,
    /// The party whose projects it will reach.
    pub owner: Owner,
    /// Which of the owner's projects it will reach.
    pub projects: ProjectGrant,
    /// The issuing user; `None` from the CLI.
    pub created_by: Option<Id>,
    /// When it is issued.
    pub created_at: Timestamp,
    /// When it stops working; `None` for never.
    pub expires_at: Option<Timestamp>,
    /// Its audit entry (`doc_token.create`: its name, projects and expiry, never its value),
    /// written with it; the store sets the target id.
    pub audit: AuditRecord,
}

/// A freshly issued token: the only time its value exists outside the client.
pub struct IssuedToken {
    /// The stored token.
    pub token: ApiToken,
    /// The token's value, to hand to the client once; it is not kept anywhere.
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
