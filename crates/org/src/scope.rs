use atrium_kernel::{Error, Id, PageRequest, Party, SortOrder};

/// The common part of every list request: paging, keyword and sort.
#[derive(Debug, Clone, Default)]
pub struct ListQuery {
    pub page: PageRequest,
    /// Case-insensitive substring of the resource's natural fields.
    pub keyword: Option<String>,
    pub sort: Option<(&'static str, SortOrder)>,
}

impl ListQuery {
    /// Validates raw list parameters against the sortable fields of a resource.
    pub fn parse(
        page: Option<i64>,
        page_size: Option<i64>,
        keyword: Option<String>,
        sort: Option<&str>,
        sortable: &[&'static str],
    ) -> Result<Self, Error> {
        let page = PageRequest::new(page, page_size)?;
        let keyword = keyword.map(|k| k.trim().to_lowercase()).filter(|k| !k.is_empty());
        if keyword.as_ref().is_some_and(|k| k.chars().count() > 64) {
            return Err(Error::invalid("keyword", "must be at most 64 characters"));
        }
        Ok(ListQuery { page, keyword, sort: SortOrder::parse(sort, sortable)? })
    }
}

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
