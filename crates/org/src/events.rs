//! The events of the org records our users' systems hear of (an HR system kept in step with
//! the tenant's employees), each written with the change it reports. An employee's event is
//! about the employee (`data.id`) and carries what identifies it at the tenant — never its
//! id-card number, bank account or contact details, which a receiver reads when allowed to.
use crate::Employee;
use atrium_kernel::{Event, Timestamp};
use serde_json::{Value, json};

/// An employee was created.
pub const EMPLOYEE_CREATED: &str = "employee.created";
/// An employee was changed (`data.changed` names the fields).
pub const EMPLOYEE_UPDATED: &str = "employee.updated";
/// An employee was deleted.
pub const EMPLOYEE_DELETED: &str = "employee.deleted";

/// What every employee event carries.
fn employee_data(e: &Employee) -> Value {
    json!({
        "employee_no": e.employee_no,
        "name": e.name,
        "status": e.status,
        "department": e.department,
        "position": e.position,
        "hire_date": e.hire_date,
    })
}

/// `employee.created` of `e` (its id set when stored).
pub fn employee_created(e: &Employee, at: Timestamp) -> Event {
    Event::new(EMPLOYEE_CREATED, at, Some(e.tenant_id), None, employee_data(e))
}

/// `employee.updated` of `after`, naming the fields that differ between `old` and `new` (the
/// employee before and after the change, serialised); `None` when no field changed.
pub fn employee_updated(after: &Employee, old: &Value, new: &Value, at: Timestamp) -> Option<Event> {
    let (Value::Object(old), Value::Object(new)) = (old, new) else { return None };
    let changed: Vec<&String> = new.iter().filter(|(k, v)| *k != "updated_at" && old.get(*k) != Some(*v)).map(|(k, _)| k).collect();
    if changed.is_empty() {
        return None;
    }
    let mut data = employee_data(after);
    data["changed"] = json!(changed);
    Some(Event::new(EMPLOYEE_UPDATED, at, Some(after.tenant_id), Some(after.id), data))
}

/// `employee.deleted` of `e`.
pub fn employee_deleted(e: &Employee, at: Timestamp) -> Event {
    Event::new(EMPLOYEE_DELETED, at, Some(e.tenant_id), Some(e.id), json!({ "employee_no": e.employee_no, "name": e.name }))
}
