//! What a write leaves behind besides the change itself: the outbox of every domain.
//!
//! A domain's write port takes an [`Effects`] and its adapter stores all of it in the same
//! database transaction as the change: a change that commits has its effects, one that rolls
//! back (or is not made, because a compare-and-set lost) has none. There are three kinds, each
//! for its own reader:
//!
//! - the [`AuditRecord`], for people: who did what, with secrets redacted and read by
//!   permission;
//! - [`NewJob`]s, for this system: work that follows from the change (settle a payment, tell
//!   the order its payment moved);
//! - [`Event`]s, for our users' systems: what happened, in a stable, documented shape
//!   (`order.paid`), delivered to the endpoints that subscribe to it.
//!
//! None is derived from another: an audited change need not be an event (a role renamed), an
//! event need not be audited (an order paid by the platform's notification is audited by the
//! ledger, and reported to the tenant as `order.paid`).
use crate::{AuditRecord, Id, NewJob, Timestamp};
use serde_json::Value;

/// Everything a write stores with its change ([module docs](self)).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Effects {
    /// The audit entry of the change, if it is audited.
    pub audit: Option<AuditRecord>,
    /// Jobs to queue with the change.
    pub jobs: Vec<NewJob>,
    /// Events to publish with the change.
    pub events: Vec<Event>,
}

impl Effects {
    /// No effects: the change alone.
    pub fn none() -> Self {
        Effects::default()
    }

    /// The audit entry `audit` alone.
    pub fn audited(audit: AuditRecord) -> Self {
        Effects { audit: Some(audit), ..Effects::default() }
    }

    /// The audit entry `audit`, if any, alone.
    pub fn maybe_audited(audit: Option<AuditRecord>) -> Self {
        Effects { audit, ..Effects::default() }
    }

    /// With `event` published too.
    pub fn with_event(mut self, event: Event) -> Self {
        self.events.push(event);
        self
    }

    /// With the events of `events` published too.
    pub fn with_events(mut self, events: impl IntoIterator<Item = Event>) -> Self {
        self.events.extend(events);
        self
    }

    /// The effects of a create, once the created record's id is known: the audit entry names
    /// it ([`AuditRecord::created`]), and so does every event whose
    /// [`subject`](Event::subject) is not set yet.
    pub fn created(mut self, id: Id) -> Self {
        self.audit = self.audit.map(|audit| audit.created(id));
        for event in &mut self.events {
            event.created(id);
        }
        self
    }
}

/// Something that happened that our users' systems may want to hear of: a change of one
/// record (its `subject`), owned by a tenant, a partner or the platform. Written with the
/// change; delivered later to the endpoints whose owner's scope holds it.
#[derive(Debug, Clone, PartialEq)]
pub struct Event {
    /// The event type: a dot name in the past tense (`order.paid`, `employee.created`).
    pub kind: &'static str,
    /// When it happened.
    pub at: Timestamp,
    /// The tenant the record belongs to, if any.
    pub tenant_id: Option<Id>,
    /// The partner the record belongs to: the tenant's partner (the adapter fills it in from
    /// the tenant when it is not given), a partner's own record, or none.
    pub partner_id: Option<Id>,
    /// The id of the record the event is about; for a create, set by
    /// [`Effects::created`] once the id is known (and written into `data` as `id`).
    pub subject: Option<Id>,
    /// What a receiver needs to act without a read: the record's ids, its `tenant_id`, amounts
    /// in fen, statuses. Never a secret, never an id-card number. A JSON object.
    pub data: Value,
}

impl Event {
    /// An event of type `kind` at `at` about record `subject` (`None` for one not created yet)
    /// of tenant `tenant_id`, carrying `data` (an object; `id` and `tenant_id` are added to it).
    pub fn new(kind: &'static str, at: Timestamp, tenant_id: Option<Id>, subject: Option<Id>, data: Value) -> Self {
        let mut event = Event { kind, at, tenant_id, partner_id: None, subject, data };
        event.fill();
        event
    }

    /// Sets the owning partner (for a partner's own record, or when the caller knows it).
    pub fn owned_by_partner(mut self, partner_id: Option<Id>) -> Self {
        self.partner_id = partner_id;
        self
    }

    fn created(&mut self, id: Id) {
        if self.subject.is_none() {
            self.subject = Some(id);
            self.fill();
        }
    }

    /// Writes `subject` as `id` and `tenant_id` into `data`.
    fn fill(&mut self) {
        let Value::Object(fields) = &mut self.data else { return };
        if let Some(id) = self.subject {
            fields.insert("id".into(), id.into());
        }
        if let Some(tenant_id) = self.tenant_id {
            fields.insert("tenant_id".into(), tenant_id.into());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at() -> Timestamp {
        chrono::DateTime::from_timestamp(1_780_000_000, 0).unwrap_or_default()
    }

    #[test]
    fn an_event_carries_its_subject_and_tenant_in_its_data() {
        let e = Event::new("order.paid", at(), Some(7), Some(42), json!({"amount": 100, "id": 1}));
        assert_eq!(e.data, json!({"id": 42, "tenant_id": 7, "amount": 100}), "the subject's id wins over one in the data");
    }

    #[test]
    fn a_create_names_its_record_in_the_audit_entry_and_the_events() {
        let audit = AuditRecord::system(at(), "employee.create", "employee", None);
        let kept = Event::new("employee.created", at(), Some(7), Some(5), json!({}));
        let effects = Effects::audited(audit)
            .with_event(Event::new("employee.created", at(), Some(7), None, json!({"name": "Li"})))
            .with_event(kept.clone())
            .created(9);
        assert_eq!(effects.audit.and_then(|a| a.target_id), Some(9));
        assert_eq!(effects.events[0].subject, Some(9));
        assert_eq!(effects.events[0].data, json!({"id": 9, "tenant_id": 7, "name": "Li"}));
        assert_eq!(effects.events[1], kept, "an event that names its record keeps it");
    }
}
