//! Atrium's shared kernel: the small vocabulary every domain speaks.
//!
//! It owns ids, [`Money`] (integer fen), paging ([`PageRequest`], [`Page`]), the caller
//! ([`Actor`] with its [`Party`] and [`PermissionSet`]), the common [`Error`] every domain
//! returns, the [`Clock`] port, and the ports shared by several domains: idempotency records
//! ([`IdempotencyStore`]), durable jobs ([`JobStore`]) and the money ledger as orders pay
//! through it ([`pay::OrderLedger`], the one contract between the two). It depends on no
//! framework and no driver.

#![warn(missing_docs)]

mod actor;
pub mod audit;
mod clock;
mod contact;
pub mod effects;
mod error;
mod failpoint;
pub mod idempotency;
pub mod jobs;
mod money;
mod named;
mod paging;
pub mod pay;
pub mod payroll;
mod period;
pub mod permission;
mod reason;
pub mod secret;
mod text;

pub use actor::{Actor, Party, PartyStanding, PartyType, PartyView, PermissionSet, UserStatus, permission_matches};
pub use audit::AuditRecord;
pub use clock::{Clock, FixedClock, SystemClock, china_day, china_standard_time};
pub use contact::{ContactTarget, Email, Phone};
pub use effects::{Effects, Event};
pub use error::{Error, FieldError, Result};
pub use idempotency::{Claim, IdempotencyKey, IdempotencyStore, RequestKey};
pub use jobs::{Job, JobHandler, JobOutcome, JobStore, NewJob};
pub use money::{Money, Overflow};
pub use named::StrEnum;
pub use paging::{COUNT_AHEAD, ListQuery, Page, PageRequest, SortKey, SortOrder};
pub use pay::{PayParams, PaymentMethod, RefundStatus};
pub use period::Period;
pub use reason::Reason;
pub use secret::Secret;
pub use text::{ByteText, Label, Name, Openid, Text, code_pattern, is_deceptive, mask_middle, one_line, parse_code, patch, shown};

/// Schemas of the kernel's input types, for `schema_with` on fields whose type says less.
#[cfg(feature = "openapi")]
pub mod schema {
    pub use crate::paging::sort_schema as sort;
    pub use crate::text::{
        EMAIL_PATTERN, PHONE_PATTERN, PLAIN_TEXT_PATTERN, TEXT_PATTERN, contact_target_schema, schema_from_json, string_schema,
    };
}

/// Database identity of a record. Ids are 64-bit integers on the wire and at rest.
pub type Id = i64;

/// Timestamps are UTC everywhere; they serialise as RFC 3339.
pub type Timestamp = chrono::DateTime<chrono::Utc>;
