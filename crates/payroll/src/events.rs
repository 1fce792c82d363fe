//! The events of payroll sheets our users' systems hear of (a bank or HR system that pays or
//! files once a sheet is approved), each written with the change it reports. About the sheet
//! (`data.id`), with its period, kind and totals in fen; never an employee's figures.
use crate::Sheet;
use atrium_kernel::{Event, Timestamp};
use serde_json::{Value, json};

/// A sheet was approved: its figures are final and its bank file can be made.
pub const SHEET_APPROVED: &str = "payroll.sheet.approved";
/// A send of a sheet's pay slips finished (`data.totals` counts the delivered and failed).
pub const SHEET_SENT: &str = "payroll.sheet.sent";

fn sheet_data(s: &Sheet) -> Value {
    json!({
        "period": s.period,
        "kind": s.kind,
        "title": s.title,
        "status": s.status,
        "totals": s.totals,
    })
}

/// `payroll.sheet.approved` of `sheet` as approved.
pub fn sheet_approved(sheet: &Sheet, at: Timestamp) -> Event {
    let mut data = sheet_data(sheet);
    data["approved_by"] = json!(sheet.approved_by);
    Event::new(SHEET_APPROVED, at, Some(sheet.tenant_id), Some(sheet.id), data)
}

/// `payroll.sheet.sent` of `sheet` once a send finished.
pub fn sheet_sent(sheet: &Sheet, at: Timestamp) -> Event {
    let mut data = sheet_data(sheet);
    data["sent_at"] = json!(sheet.sent_at);
    Event::new(SHEET_SENT, at, Some(sheet.tenant_id), Some(sheet.id), data)
}
