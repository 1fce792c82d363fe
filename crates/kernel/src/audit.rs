//! The audit trail's record: who did what to which record, when, from where, and how it
//! changed. Domains build records; repositories write them in the same transaction as the
//! change they describe.
use crate::{Actor, Id, Party, Timestamp};
use serde_json::{Map, Value};

/// Fields whose values never reach the audit trail, whatever record they appear in.
pub const REDACTED_FIELDS: &[&str] =
    &["password", "password_hash", "id_card_no", "bank_account", "token", "token_hash", "secret", "api_key", "private_key"];

/// One audit entry, ready to store.
#[derive(Debug, Clone, PartialEq)]
pub struct AuditRecord {
    /// When the change happened.
    pub at: Timestamp,
    /// The user who made the change; `None` for the system (jobs, platform notifications).
    pub actor_user_id: Option<Id>,
    /// The client's address, if the change came from a request.
    pub ip: Option<String>,
    /// The request's id, if the change came from a request.
    pub request_id: Option<String>,
    /// `<resource>.<verb>`, e.g. `tenant.update`, `session.login`.
    pub action: String,
    /// What kind of record changed: `tenant`, `user`, `payroll_sheet`, ….
    pub target_type: &'static str,
    /// Filled in by the repository for creates.
    pub target_id: Option<Id>,
    /// The owning party of the target, which decides who may read the entry.
    pub partner_id: Option<Id>,
    /// The owning tenant of the target, which decides who may read the entry.
    pub tenant_id: Option<Id>,
    /// Changed fields only, before and after, with secrets redacted.
    pub before: Option<Value>,
    /// Changed fields only, after the change, with secrets redacted.
    pub after: Option<Value>,
}

impl AuditRecord {
    /// A record of `action` by `actor` on `target_type`/`target_id`, owned by the given party.
    pub fn by(actor: &Actor, at: Timestamp, action: impl Into<String>, target_type: &'static str, target_id: Option<Id>) -> Self {
        AuditRecord {
            actor_user_id: Some(actor.user_id),
            ip: actor.ip.clone(),
            request_id: actor.request_id.clone(),
            ..AuditRecord::system(at, action, target_type, target_id)
        }
    }

    /// A record of something that happened without an authenticated actor (a login, the
    /// CLI, the server itself); set the actor with [`acted_by`](Self::acted_by) when known.
    pub fn system(at: Timestamp, action: impl Into<String>, target_type: &'static str, target_id: Option<Id>) -> Self {
        AuditRecord {
            at,
            actor_user_id: None,
            ip: None,
            request_id: None,
            action: action.into(),
            target_type,
            target_id,
            partner_id: None,
            tenant_id: None,
            before: None,
            after: None,
        }
    }

    /// Names the user who made the change (`None` for the system).
    pub fn acted_by(mut self, user_id: Option<Id>) -> Self {
        self.actor_user_id = user_id;
        self
    }

    /// Where the request came from.
    pub fn from_client(mut self, ip: Option<String>, request_id: Option<String>) -> Self {
        self.ip = ip;
        self.request_id = request_id;
        self
    }

    /// Records `after` (the record after the change, or its changed fields) with secrets redacted.
    pub fn with_after(mut self, after: Value) -> Self {
        self.after = Some(redact(after));
        self
    }

    /// Sets the owning party from where the target lives.
    pub fn owned_by(mut self, partner_id: Option<Id>, tenant_id: Option<Id>) -> Self {
        self.partner_id = partner_id;
        self.tenant_id = tenant_id;
        self
    }

    /// Sets the owner from a party (a tenant party carries its partner).
    pub fn owned_by_party(self, party: Party) -> Self {
        match party {
            Party::Platform => self.owned_by(None, None),
            Party::Partner { partner_id } => self.owned_by(Some(partner_id), None),
            Party::Tenant { tenant_id, partner_id } => self.owned_by(partner_id, Some(tenant_id)),
        }
    }

    /// The record of a create once the created record's id is known: its target, its owner
    /// when the record is a tenant or a partner, and `id` in `after`.
    pub fn created(mut self, id: Id) -> Self {
        self.target_id = Some(id);
        match self.target_type {
            "tenant" => self.tenant_id = Some(id),
            "partner" => self.partner_id = Some(id),
            _ => {}
        }
        if let Some(Value::Object(map)) = self.after.as_mut() {
            map.insert("id".into(), Value::from(id));
        }
        self
    }

    /// Records the change between two serialised states (either may be absent).
    pub fn change(mut self, before: Option<&Value>, after: Option<&Value>) -> Self {
        let (b, a) = diff(before, after);
        self.before = b;
        self.after = a;
        self
    }
}

/// The fields that differ between `before` and `after` (objects), each side redacted.
/// A create has no `before`; a delete no `after`.
pub fn diff(before: Option<&Value>, after: Option<&Value>) -> (Option<Value>, Option<Value>) {
    let b = before.and_then(Value::as_object);
    let a = after.and_then(Value::as_object);
    match (b, a) {
        (None, None) => (None, None),
        (Some(b), None) => (Some(redact(Value::Object(b.clone()))), None),
        (None, Some(a)) => (None, Some(redact(Value::Object(a.clone())))),
        (Some(b), Some(a)) => {
            let mut bo = Map::new();
            let mut ao = Map::new();
            for key in b.keys().chain(a.keys().filter(|k| !b.contains_key(*k))) {
                if matches!(key.as_str(), "updated_at") {
                    continue;
                }
                let (bv, av) = (b.get(key).unwrap_or(&Value::Null), a.get(key).unwrap_or(&Value::Null));
                if bv != av {
                    bo.insert(key.clone(), bv.clone());
                    ao.insert(key.clone(), av.clone());
                }
            }
            (Some(redact(Value::Object(bo))), Some(redact(Value::Object(ao))))
        }
    }
}

/// Sensitive fields whose last four characters an entry keeps (as the records show them), so
/// a change of them can be told from the entry: `bank_account` `6222021234567890` is
/// `************7890`.
pub const TAIL_SHOWN_FIELDS: &[&str] = &["bank_account"];

/// `value` masked but for its last four characters; `"***"` when it has fewer than eight.
fn masked_tail(value: &str) -> String {
    let n = value.chars().count();
    if n < 8 {
        return "***".into();
    }
    value.chars().enumerate().map(|(i, c)| if i + 4 >= n { c } else { '*' }).collect()
}

/// Replaces the values of sensitive fields (at any depth) with `"***"`; of those in
/// [`TAIL_SHOWN_FIELDS`], keeps the last four characters.
pub fn redact(value: Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| {
                    if let (true, Value::String(text)) = (TAIL_SHOWN_FIELDS.contains(&k.as_str()), &v) {
                        let masked = masked_tail(text);
                        (k, Value::String(masked))
                    } else if REDACTED_FIELDS.contains(&k.as_str()) && !v.is_null() {
                        (k, Value::String("***".into()))
                    } else {
                        (k, redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.into_iter().map(redact).collect()),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_changed_bank_account_shows_its_last_four_on_each_side() {
        let (b, a) = diff(Some(&json!({"bank_account": "6222021234567890"})), Some(&json!({"bank_account": "6217000011112222"})));
        assert_eq!(b, Some(json!({"bank_account": "************7890"})));
        assert_eq!(a, Some(json!({"bank_account": "************2222"})));
        assert_eq!(redact(json!({"bank_account": "1234567"})), json!({"bank_account": "***"}), "too short to show any of it");
        assert_eq!(redact(json!({"bank_account": null})), json!({"bank_account": null}));
        assert_eq!(redact(json!({"bank_account": 6222021234567890_i64})), json!({"bank_account": "***"}));
    }

    #[test]
    fn diff_keeps_only_changed_fields() {
        let (b, a) = diff(
            Some(&json!({"name": "A", "phone": "1", "updated_at": "x"})),
            Some(&json!({"name": "B", "phone": "1", "updated_at": "y"})),
        );
        assert_eq!(b, Some(json!({"name": "A"})));
        assert_eq!(a, Some(json!({"name": "B"})));
    }

    #[test]
    fn secrets_are_redacted_on_both_sides() {
        let (b, a) = diff(Some(&json!({"id_card_no": "110101199003074514"})), Some(&json!({"id_card_no": "11010119900307451X"})));
        assert_eq!(b, Some(json!({"id_card_no": "***"})));
        assert_eq!(a, Some(json!({"id_card_no": "***"})));
    }

    #[test]
    fn a_create_records_the_whole_new_state_redacted() {
        let (b, a) = diff(None, Some(&json!({"name": "A", "password": "hunter2", "nested": {"token": "t"}})));
        assert_eq!(b, None);
        assert_eq!(a, Some(json!({"name": "A", "password": "***", "nested": {"token": "***"}})));
    }
}
