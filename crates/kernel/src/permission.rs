//! The permission catalogue: every permission a route or operation checks, as typed
//! constants. Routes name these constants, never string literals, so a route cannot require a
//! permission the catalogue (and so the role editor) does not know.
use serde::Serialize;

/// A `resource:action` permission of the catalogue, with what it allows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct Permission {
    /// The permission string, `resource:action` (e.g. `payroll:approve`).
    pub name: &'static str,
    /// What it allows, in English, for the role editor.
    pub description: &'static str,
}

macro_rules! catalogue {
    ($($konst:ident = $name:literal : $description:literal),* $(,)?) => {
        $(
            #[doc = concat!("`", $name, "`: ", $description, ".")]
            pub const $konst: Permission = Permission { name: $name, description: $description };
        )*
        /// Every permission, in the order the role editor lists them.
        pub const CATALOGUE: &[Permission] = &[$($konst),*];
    };
}

catalogue! {
    USER_READ = "user:read": "List and read users",
    USER_CREATE = "user:create": "Create users",
    USER_UPDATE = "user:update": "Update users, their roles and status",
    USER_DELETE = "user:delete": "Delete users",
    AGENT_READ = "agent:read": "List and read partners",
    AGENT_CREATE = "agent:create": "Create partners",
    AGENT_UPDATE = "agent:update": "Update partners",
    AGENT_DELETE = "agent:delete": "Delete partners",
    TENANT_READ = "tenant:read": "List and read tenants",
    TENANT_CREATE = "tenant:create": "Create tenants",
    TENANT_UPDATE = "tenant:update": "Update tenants",
    TENANT_DELETE = "tenant:delete": "Delete tenants",
    EMPLOYEE_READ = "employee:read": "List and read employees (sensitive numbers masked)",
    EMPLOYEE_READ_SENSITIVE = "employee:read_sensitive": "See employees' id card and bank account numbers in full",
    EMPLOYEE_CREATE = "employee:create": "Create employees",
    EMPLOYEE_UPDATE = "employee:update": "Update employees",
    EMPLOYEE_DELETE = "employee:delete": "Delete employees",
    PAYROLL_READ = "payroll:read": "List and read payroll sheets",
    PAYROLL_CREATE = "payroll:create": "Create payroll sheets",
    PAYROLL_UPDATE = "payroll:update": "Update payroll sheets",
    PAYROLL_CALCULATE = "payroll:calculate": "Calculate payroll sheets",
    PAYROLL_APPROVE = "payroll:approve": "Approve payroll sheets",
    PAYROLL_SEND = "payroll:send": "Send pay slips",
    ORDER_READ = "order:read": "List and read orders",
    ORDER_CREATE = "order:create": "Create orders",
    ORDER_PAY = "order:pay": "Pay orders",
    ORDER_REFUND = "order:refund": "Refund orders",
    MINIPROGRAM_READ = "miniprogram:read": "Read mini-program tasks and status",
    MINIPROGRAM_UPLOAD = "miniprogram:upload": "Upload mini-program code",
    MINIPROGRAM_AUDIT = "miniprogram:audit": "Submit mini-program code for audit",
    MINIPROGRAM_PUBLISH = "miniprogram:publish": "Publish and roll back mini-program versions",
    MINIPROGRAM_PAYMENT = "miniprogram:payment": "Manage payment configuration and certificates",
    PAYMENT_PAY = "payment:pay": "Create payment orders",
    PAYMENT_QUERY = "payment:query": "Query payment orders",
    PAYMENT_REFUND = "payment:refund": "Refund payments",
    PAYMENT_CLOSE = "payment:close": "Close payment orders",
    ROLE_READ = "role:read": "List roles and the permission catalogue",
    ROLE_CREATE = "role:create": "Create custom roles",
    ROLE_UPDATE = "role:update": "Update custom roles",
    ROLE_DELETE = "role:delete": "Delete custom roles",
    AUDIT_READ = "audit:read": "Read the audit trail",
    DOC_READ = "doc:read": "Read document projects and tokens",
    DOC_MANAGE = "doc:manage": "Manage document projects and API tokens",
}

/// Whether `p` is a catalogue permission, `*`, or a `resource:*` wildcard over a catalogue
/// resource.
pub fn is_known_permission(p: &str) -> bool {
    if p == "*" {
        return true;
    }
    if let Some(resource) = p.strip_suffix(":*") {
        return CATALOGUE.iter().any(|c| c.name.split_once(':').is_some_and(|(r, _)| r == resource));
    }
    CATALOGUE.iter().any(|c| c.name == p)
}

/// Every value [`is_known_permission`] accepts: the catalogue, each resource's wildcard, `*`.
pub fn known_permissions() -> Vec<String> {
    let mut out: Vec<String> = CATALOGUE.iter().map(|p| p.name.to_owned()).collect();
    for p in CATALOGUE {
        if let Some((resource, _)) = p.name.split_once(':') {
            let wildcard = format!("{resource}:*");
            if !out.contains(&wildcard) {
                out.push(wildcard);
            }
        }
    }
    out.push("*".to_owned());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_permissions_and_their_wildcards_are_known() {
        assert!(is_known_permission(PAYROLL_APPROVE.name));
        assert!(is_known_permission("payroll:*"));
        assert!(is_known_permission("*"));
        assert!(!is_known_permission("payroll:steal"));
        assert!(!is_known_permission("nuclear:*"));
        for p in known_permissions() {
            assert!(is_known_permission(&p), "{p}");
        }
    }

    #[test]
    fn every_name_is_resource_colon_action_and_listed_once() {
        let mut names: Vec<&str> = CATALOGUE.iter().map(|p| p.name).collect();
        for n in &names {
            let (resource, action) = n.split_once(':').unwrap_or(("", ""));
            assert!(!resource.is_empty() && !action.is_empty() && !action.contains(':'), "{n}");
        }
        let total = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), total, "a permission is listed twice");
    }
}
