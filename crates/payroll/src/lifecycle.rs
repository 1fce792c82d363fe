//! The lifecycle of a payroll sheet (docs/payroll.md):
//! `draft` →calculate→ `calculated` →approve→ `approved` →send→ `sent`.
//! A calculated sheet may be recalculated, or edited (back to `draft`); approved and sent
//! sheets are immutable, and sending again only retries failed deliveries. Anything else is a
//! 409 `Conflict`.
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id};
use serde::{Deserialize, Serialize};

/// Where a sheet is in its lifecycle: `draft` → `calculated` → `approved` → `sent`.
///
/// ```
/// use atrium_payroll::{SheetAction, SheetStatus};
///
/// let calculated = SheetStatus::Draft.after(SheetAction::Calculate)?;
/// let approved = calculated.after(SheetAction::Approve)?;
/// assert_eq!(approved, SheetStatus::Approved);
/// // An approved sheet is final: editing it is a 409.
/// assert!(approved.after(SheetAction::Edit).is_err());
/// # Ok::<(), atrium_kernel::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, strum::IntoStaticStr, strum::EnumString)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "lowercase")]
#[strum(serialize_all = "snake_case")]
pub enum SheetStatus {
    /// Created or edited; its figures are not calculated.
    Draft,
    /// Every item calculated; it may still be edited (back to draft) or recalculated.
    Calculated,
    /// Approved: its figures are final and count in later sheets' year to date.
    Approved,
    /// Approved, and its pay slips went out (a send may be repeated for failed slips).
    Sent,
}

/// What a caller asks of a sheet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SheetAction {
    /// Change the title or items.
    Edit,
    /// Calculate every item.
    Calculate,
    /// Approve the calculated figures.
    Approve,
    /// Send the pay slips.
    Send,
}

impl SheetStatus {
    /// The status after `action`, or `Conflict` naming why it is not allowed now.
    pub fn after(self, action: SheetAction) -> Result<SheetStatus, Error> {
        use SheetAction as A;
        use SheetStatus as S;
        match (self, action) {
            (S::Draft | S::Calculated, A::Edit) => Ok(S::Draft),
            (S::Draft | S::Calculated, A::Calculate) => Ok(S::Calculated),
            (S::Calculated, A::Approve) => Ok(S::Approved),
            (S::Approved | S::Sent, A::Send) => Ok(S::Sent),
            (S::Draft, A::Approve) => Err(Error::conflict(Reason::State, "a draft sheet must be calculated before it is approved")),
            (S::Draft | S::Calculated, A::Send) => Err(Error::conflict(Reason::State, "only an approved sheet can be sent")),
            (S::Approved | S::Sent, A::Edit | A::Calculate) => {
                Err(Error::conflict(Reason::State, format!("an {} sheet is final and cannot change", self.as_str())))
            }
            (S::Approved | S::Sent, A::Approve) => Err(Error::conflict(Reason::State, "this sheet is already approved")),
        }
    }
}

/// Four-eyes approval: with the tenant's `four_eyes` on, the approver must not be the user
/// who calculated the sheet.
pub fn check_four_eyes(four_eyes: bool, calculated_by: Option<Id>, approver: Id) -> Result<(), Error> {
    if four_eyes && calculated_by == Some(approver) {
        return Err(Error::forbidden(Reason::FourEyes, "four-eyes approval: the user who calculated a sheet cannot approve it"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::SheetAction::*;
    use super::SheetStatus::*;
    use super::*;

    #[test]
    fn the_happy_path_runs_draft_calculated_approved_sent() {
        let s = Draft.after(Calculate).unwrap();
        let s = s.after(Approve).unwrap();
        let s = s.after(Send).unwrap();
        assert_eq!(s, Sent);
    }

    #[test]
    fn a_calculated_sheet_may_be_recalculated_or_edited_back_to_draft() {
        assert_eq!(Calculated.after(Calculate).unwrap(), Calculated);
        assert_eq!(Calculated.after(Edit).unwrap(), Draft);
    }

    #[test]
    fn approving_a_draft_is_a_conflict() {
        assert!(matches!(Draft.after(Approve), Err(Error::Conflict(..))));
    }

    #[test]
    fn approved_and_sent_sheets_are_immutable() {
        for s in [Approved, Sent] {
            assert!(matches!(s.after(Edit), Err(Error::Conflict(..))), "{s:?} edit");
            assert!(matches!(s.after(Calculate), Err(Error::Conflict(..))), "{s:?} calculate");
            assert!(matches!(s.after(Approve), Err(Error::Conflict(..))), "{s:?} approve");
        }
    }

    #[test]
    fn only_approved_or_sent_sheets_can_be_sent_and_sending_again_is_allowed() {
        assert!(matches!(Draft.after(Send), Err(Error::Conflict(..))));
        assert!(matches!(Calculated.after(Send), Err(Error::Conflict(..))));
        assert_eq!(Sent.after(Send).unwrap(), Sent, "a resend retries failed deliveries");
    }

    #[test]
    fn statuses_round_trip_through_their_names() {
        for s in [Draft, Calculated, Approved, Sent] {
            assert_eq!(SheetStatus::parse(s.as_str()), Some(s));
        }
        assert_eq!(SheetStatus::parse("paid"), None);
    }

    #[test]
    fn the_calculator_cannot_approve_under_four_eyes() {
        assert!(matches!(check_four_eyes(true, Some(7), 7), Err(Error::Forbidden(..))));
        assert!(check_four_eyes(true, Some(7), 8).is_ok());
        assert!(check_four_eyes(false, Some(7), 7).is_ok(), "a tenant may turn four-eyes off");
    }
}
