//! Service tests against mocked ports, one file per service.
use crate::model::Role;
use atrium_kernel::{Actor, FixedClock, Id, Party, PartyType, Timestamp};
use chrono::TimeZone;
use std::sync::Arc;

mod auth;
mod roles;
mod users;

fn admin_now() -> Timestamp {
    chrono::Utc.with_ymd_and_hms(2026, 4, 1, 0, 0, 0).single().expect("valid")
}

fn admin_clock() -> Arc<FixedClock> {
    Arc::new(FixedClock::new(admin_now()))
}

/// A caller with these permissions, user id 10.
fn actor(party: Party, perms: &[&str]) -> Actor {
    Actor::new(10, "s", party, perms.iter().copied())
}

/// A built-in role with these permissions.
fn role(id: Id, party_type: PartyType, perms: &[&str]) -> Role {
    Role {
        id,
        code: format!("r{id}"),
        name: "R".into(),
        party_type,
        owner_partner_id: None,
        owner_tenant_id: None,
        builtin: true,
        permissions: perms.iter().map(|p| p.to_string()).collect(),
        created_at: admin_now(),
        updated_at: admin_now(),
    }
}
