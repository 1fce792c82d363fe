//! The events of mini-program releases and campaigns our users' systems hear of (a partner's
//! CRM that tells a shop its new version is live), each written with the change it reports.
use crate::campaign::{Campaign, CampaignStatus};
use crate::{AuditStatus, AuditTask, ReleaseMode};
use atrium_kernel::{Event, Timestamp};
use serde_json::json;

/// The platform passed a submitted version's audit.
pub const AUDIT_PASSED: &str = "miniprogram.audit.passed";
/// The platform rejected a submitted version's audit (`data.reason` says why).
pub const AUDIT_REJECTED: &str = "miniprogram.audit.rejected";
/// A version was released, to every user or to a share of them (`data.gray_percentage`).
pub const RELEASED: &str = "miniprogram.released";
/// A campaign was paused (by a person, or by its failure budget).
pub const CAMPAIGN_PAUSED: &str = "campaign.paused";
/// A campaign finished: every tenant released, skipped or failed.
pub const CAMPAIGN_COMPLETED: &str = "campaign.completed";

/// `miniprogram.audit.passed` / `.rejected` when the audit task's status became one of them
/// (from `before`); none otherwise. About the audit task.
pub fn audit_decided(before: AuditStatus, after: &AuditTask, at: Timestamp) -> Option<Event> {
    let kind = match after.status {
        AuditStatus::Passed if before != AuditStatus::Passed => AUDIT_PASSED,
        AuditStatus::Rejected if before != AuditStatus::Rejected => AUDIT_REJECTED,
        _ => return None,
    };
    let data = json!({
        "version": after.version,
        "auditid": after.auditid,
        "status": after.status,
        "reason": after.reason,
        "decided_at": after.decided_at,
    });
    Some(Event::new(kind, at, Some(after.tenant_id), Some(after.id), data))
}

/// `miniprogram.released` of the version of `audit`, released as `mode`. About the audit task
/// whose version went out.
pub fn released(audit: &AuditTask, mode: ReleaseMode, at: Timestamp) -> Event {
    let gray = match mode {
        ReleaseMode::Full => None,
        ReleaseMode::Gray(p) => Some(p),
    };
    let data = json!({ "version": audit.version, "full": gray.is_none(), "gray_percentage": gray });
    Event::new(RELEASED, at, Some(audit.tenant_id), Some(audit.id), data)
}

/// `campaign.paused` / `campaign.completed` when the campaign's status became one of them
/// (from `before`); none otherwise. A campaign is the platform's or a partner's: the event is
/// its owner's.
pub fn campaign_changed(before: CampaignStatus, after: &Campaign, at: Timestamp) -> Option<Event> {
    let kind = match after.status {
        CampaignStatus::Paused if before != CampaignStatus::Paused => CAMPAIGN_PAUSED,
        CampaignStatus::Completed if before != CampaignStatus::Completed => CAMPAIGN_COMPLETED,
        _ => return None,
    };
    let data = json!({
        "name": after.name,
        "version": after.version,
        "status": after.status,
        "paused_reason": after.paused_reason,
        "tenant_total": after.tenant_total,
    });
    Some(Event::new(kind, at, None, Some(after.id), data).owned_by_partner(after.partner_id))
}
