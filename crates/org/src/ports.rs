use atrium_kernel::Id;

/// Told when a change to a party changed its users' access, so in-process caches of
/// authenticated sessions (identity owns them) drop what they hold at once.
#[cfg_attr(any(test, feature = "mock"), mockall::automock)]
pub trait AccessChanged: Send + Sync + 'static {
    /// A user went with its deleted party.
    fn user_access_changed(&self, user_id: Id);
    /// A partner's or tenant's status (or a tenant's partner) changed: every user and API
    /// token of that party, and of a partner's tenants, is affected.
    fn party_changed(&self);
}
