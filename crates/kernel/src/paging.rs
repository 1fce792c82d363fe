use crate::{Error, FieldError};
use serde::Serialize;

/// A validated page request: 1-based `page`, `page_size` in 1..=100.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PageRequest {
    page: u32,
    page_size: u32,
}

impl PageRequest {
    /// The page size when a request names none.
    pub const DEFAULT_SIZE: u32 = 20;
    /// The largest page size a request may ask for.
    pub const MAX_SIZE: u32 = 100;
    /// The highest page number a list serves.
    pub const MAX_PAGE: u32 = 1_000_000;

    /// Missing values take their defaults; out-of-range values are a 400 naming the field.
    pub fn new(page: Option<i64>, page_size: Option<i64>) -> Result<Self, Error> {
        let page = page.unwrap_or(1);
        let page_size = page_size.unwrap_or(i64::from(Self::DEFAULT_SIZE));
        let mut errors = Vec::new();
        if !(1..=i64::from(Self::MAX_PAGE)).contains(&page) {
            errors.push(FieldError::new("page", format!("must be between 1 and {}", Self::MAX_PAGE)));
        }
        if !(1..=i64::from(Self::MAX_SIZE)).contains(&page_size) {
            errors.push(FieldError::new("page_size", format!("must be between 1 and {}", Self::MAX_SIZE)));
        }
        if !errors.is_empty() {
            return Err(Error::Invalid(errors));
        }
        Ok(PageRequest { page: page as u32, page_size: page_size as u32 })
    }

    /// The 1-based page number.
    pub fn page(&self) -> u32 {
        self.page
    }

    /// How many records a page holds.
    pub fn page_size(&self) -> u32 {
        self.page_size
    }

    /// How many records come before this page (for a query's `OFFSET`).
    pub fn offset(&self) -> i64 {
        i64::from(self.page - 1) * i64::from(self.page_size)
    }

    /// The page size as a query's `LIMIT`.
    pub fn limit(&self) -> i64 {
        i64::from(self.page_size)
    }
}

impl Default for PageRequest {
    fn default() -> Self {
        PageRequest { page: 1, page_size: Self::DEFAULT_SIZE }
    }
}

/// Direction of a list's sort, parsed from `sort=field` / `sort=-field`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Ascending (`sort=field`).
    Asc,
    /// Descending (`sort=-field`), the default.
    #[default]
    Desc,
}

/// A resource's sortable fields as an enum, declared once in its domain: derive strum's
/// `EnumString`, `IntoStaticStr` and `VariantNames` with `#[strum(serialize_all =
/// "snake_case")]`. Stores match on it exhaustively, so a new key cannot go unsupported.
pub trait SortKey: Copy + std::str::FromStr + strum::VariantNames {}

impl<T: Copy + std::str::FromStr + strum::VariantNames> SortKey for T {}

impl SortOrder {
    /// Parses `field` or `-field` against the resource's sort keys; returns the key and order.
    pub fn parse<S: SortKey>(sort: Option<&str>) -> Result<Option<(S, SortOrder)>, Error> {
        let Some(raw) = sort.map(str::trim).filter(|s| !s.is_empty()) else {
            return Ok(None);
        };
        let (name, order) = match raw.strip_prefix('-') {
            Some(rest) => (rest, SortOrder::Desc),
            None => (raw.strip_prefix('+').unwrap_or(raw), SortOrder::Asc),
        };
        name.parse::<S>()
            .map(|key| Some((key, order)))
            .map_err(|_| Error::invalid("sort", format!("must be one of {}, optionally prefixed by '-'", S::VARIANTS.join(", "))))
    }
}

/// The `sort` parameter of a list whose keys are `S`: a key, or `-` and a key for descending.
#[cfg(feature = "openapi")]
pub fn sort_schema<S: SortKey>() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
    // An empty value is the default order.
    let values: Vec<String> =
        std::iter::once(String::new()).chain(S::VARIANTS.iter().flat_map(|k| [(*k).to_owned(), format!("-{k}")])).collect();
    utoipa::openapi::ObjectBuilder::new()
        .schema_type(utoipa::openapi::schema::Type::String)
        .enum_values(Some(values))
        .description(Some("A sort key, or `-` and a key for descending order; empty for the default"))
        .into()
}

/// One page of a list:
/// `{"items":[...],"total":N,"total_exact":true,"page":1,"page_size":20}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Page<T> {
    /// The records on this page.
    pub items: Vec<T>,
    /// How many records the whole list holds, on every page; when `total_exact` is false, how
    /// many it holds at least.
    pub total: i64,
    /// Whether `total` is the exact count. A long list is counted only up to
    /// [`COUNT_AHEAD`] records past the end of the page asked for: past that bound `total` is
    /// the bound and this is false (the list holds more; later pages still work).
    pub total_exact: bool,
    /// This page's 1-based number.
    pub page: u32,
    /// The page size asked for (the last page may hold fewer records).
    pub page_size: u32,
}

/// How many records past the end of the page asked for a list's total is counted exactly: a
/// count costs what the page costs, not what the table holds.
pub const COUNT_AHEAD: i64 = 1000;

impl<T> Page<T> {
    /// The page `req` asked for, holding `items` of a list of exactly `total` records.
    pub fn new(items: Vec<T>, total: i64, req: PageRequest) -> Self {
        Page { items, total, total_exact: true, page: req.page(), page_size: req.page_size() }
    }

    /// The page `req` asked for, of a list of at least `total` records (more were not counted).
    pub fn at_least(items: Vec<T>, total: i64, req: PageRequest) -> Self {
        Page { total_exact: false, ..Page::new(items, total, req) }
    }

    /// The same page with each record converted by `f` (a model to its view, say).
    pub fn map<U>(self, f: impl FnMut(T) -> U) -> Page<U> {
        Page {
            items: self.items.into_iter().map(f).collect(),
            total: self.total,
            total_exact: self.total_exact,
            page: self.page,
            page_size: self.page_size,
        }
    }
}

/// The common part of every list request: paging, keyword and sort by one of the resource's
/// sort keys `S`.
#[derive(Debug, Clone)]
pub struct ListQuery<S> {
    /// Which page to return.
    pub page: PageRequest,
    /// Case-insensitive substring of the resource's natural fields.
    pub keyword: Option<String>,
    /// The sort key and direction; `None` for the resource's default order.
    pub sort: Option<(S, SortOrder)>,
}

impl<S> Default for ListQuery<S> {
    fn default() -> Self {
        ListQuery { page: PageRequest::default(), keyword: None, sort: None }
    }
}

impl<S> ListQuery<S> {
    /// The longest `keyword`, in characters as sent (before lower-casing, which may lengthen it).
    pub const MAX_KEYWORD_CHARS: usize = 64;
}

impl<S: SortKey> ListQuery<S> {
    /// Validates raw list parameters; the sort must name one of `S`.
    pub fn parse(page: Option<i64>, page_size: Option<i64>, keyword: Option<String>, sort: Option<&str>) -> Result<Self, Error> {
        let page = PageRequest::new(page, page_size)?;
        let keyword = keyword.map(|k| k.trim().to_owned()).filter(|k| !k.is_empty());
        if keyword.as_ref().is_some_and(|k| k.chars().count() > Self::MAX_KEYWORD_CHARS) {
            return Err(Error::invalid("keyword", format!("must be at most {} characters", Self::MAX_KEYWORD_CHARS)));
        }
        let keyword = keyword.map(|k| k.to_lowercase());
        // No stored name, phone or number holds a control character, and a NUL breaks both
        // the SQLite full-text parser and PostgreSQL's text type: refuse them here, for every list.
        if keyword.as_ref().is_some_and(|k| k.chars().any(char::is_control)) {
            return Err(Error::invalid("keyword", "must not contain control characters"));
        }
        Ok(ListQuery { page, keyword, sort: SortOrder::parse(sort)? })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, strum::EnumString, strum::VariantNames)]
    #[strum(serialize_all = "snake_case")]
    enum Key {
        CreatedAt,
        Name,
    }

    #[test]
    fn defaults_to_first_page_of_twenty() {
        let p = PageRequest::new(None, None).unwrap();
        assert_eq!((p.page(), p.page_size(), p.offset()), (1, 20, 0));
    }

    #[test]
    fn page_size_over_one_hundred_is_rejected_naming_the_field() {
        let err = PageRequest::new(Some(1), Some(101)).unwrap_err();
        assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "page_size"));
    }

    #[test]
    fn offset_counts_whole_pages() {
        assert_eq!(PageRequest::new(Some(3), Some(50)).unwrap().offset(), 100);
    }

    #[test]
    fn a_keyword_with_control_characters_is_rejected_naming_the_field() {
        for k in ["\0abc", "ab\u{1}c", "a\tb", "ab\u{7f}", "a\u{85}b", "ab\u{9f}c"] {
            let err = ListQuery::<Key>::parse(None, None, Some(k.into()), None).unwrap_err();
            assert!(matches!(err, Error::Invalid(ref e) if e[0].field == "keyword"), "{k:?}: {err:?}");
        }
    }

    #[test]
    fn a_keyword_is_trimmed_and_lower_cased_and_may_hold_punctuation() {
        let q = ListQuery::<Key>::parse(None, None, Some("  \"Ab*\\%_ NEAR( OR  \n".into()), None).unwrap();
        assert_eq!(q.keyword.as_deref(), Some("\"ab*\\%_ near( or"));
        assert!(ListQuery::<Key>::parse(None, None, Some("x".repeat(65)), None).is_err());
    }

    #[test]
    fn sort_accepts_known_fields_with_direction() {
        assert_eq!(SortOrder::parse::<Key>(Some("-created_at")).unwrap(), Some((Key::CreatedAt, SortOrder::Desc)));
        assert_eq!(SortOrder::parse::<Key>(Some("name")).unwrap(), Some((Key::Name, SortOrder::Asc)));
        let err = SortOrder::parse::<Key>(Some("password")).unwrap_err();
        assert!(err.to_string().contains("created_at, name"), "{err}");
    }
}
