use atrium_kernel::{Error, Id, Party};

pub use atrium_kernel::ListQuery;

/// The partner a caller may act for when it names `requested` (or none): platform callers
/// may name any, partner callers only their own.
pub(crate) fn partner_in_scope(scope: Party, requested: Option<Id>) -> Result<Option<Id>, Error> {
    match (scope, requested) {
        (Party::Platform, r) => Ok(r),
        (Party::Partner { partner_id }, None) => Ok(Some(partner_id)),
        (Party::Partner { partner_id }, Some(r)) if r == partner_id => Ok(Some(r)),
        (Party::Partner { .. }, Some(_)) => Err(Error::invalid("partner_id", "no such partner")),
        (Party::Tenant { .. }, _) => Err(Error::forbidden("tenant users cannot act for a partner")),
    }
}
