//! Whether a party lets its users and API tokens in, read from the partner and tenant rows.
use atrium_kernel::{Id, Party, PartyStanding, PartyType, Result};
use diesel::prelude::*;

use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{partners, tenants, users};

/// The standing of `party`: a disabled (or deleted) partner or tenant is `Disabled`, a tenant
/// of a disabled partner `PartnerDisabled`, a self-registered tenant `Pending` until activated.
pub(crate) fn party_standing(conn: &mut DbConn, party: Party) -> Result<PartyStanding> {
    Ok(match party {
        Party::Platform => PartyStanding::Active,
        Party::Partner { partner_id } => {
            let status: Option<String> =
                partners::table.find(partner_id).select(partners::status).first(conn).optional().map_err(db_error)?;
            match status.as_deref() {
                Some("active") => PartyStanding::Active,
                _ => PartyStanding::Disabled(PartyType::Partner),
            }
        }
        Party::Tenant { tenant_id, .. } => {
            let row: Option<(String, Option<String>)> = tenants::table
                .left_join(partners::table)
                .filter(tenants::id.eq(tenant_id))
                .select((tenants::status, partners::status.nullable()))
                .first(conn)
                .optional()
                .map_err(db_error)?;
            match row {
                None => PartyStanding::Disabled(PartyType::Tenant),
                Some((tenant, _)) if tenant != "active" && tenant != "pending" => PartyStanding::Disabled(PartyType::Tenant),
                Some((_, Some(partner))) if partner != "active" => PartyStanding::PartnerDisabled,
                Some((tenant, _)) if tenant == "pending" => PartyStanding::Pending,
                Some(_) => PartyStanding::Active,
            }
        }
    })
}

/// Why a user can no longer vouch for what it issued (an API token): it is gone, disabled,
/// or its party is shut out. `None` while the user is active in a party that lets it in.
pub(crate) fn user_refusal(conn: &mut DbConn, user_id: Id) -> Result<Option<&'static str>> {
    let row: Option<(String, String, Option<i64>, Option<i64>)> = users::table
        .find(user_id)
        .select((users::status, users::party_type, users::partner_id, users::tenant_id))
        .first(conn)
        .optional()
        .map_err(db_error)?;
    let Some((status, party_type, partner_id, tenant_id)) = row else { return Ok(Some("the user who issued it no longer exists")) };
    if status != "active" {
        return Ok(Some("the user who issued it is disabled"));
    }
    let party = match (party_type.as_str(), partner_id, tenant_id) {
        ("partner", Some(partner_id), _) => Party::Partner { partner_id },
        ("tenant", _, Some(tenant_id)) => Party::Tenant { tenant_id, partner_id: None },
        _ => Party::Platform,
    };
    Ok(party_standing(conn, party)?.refusal().map(|_| "the party of the user who issued it is disabled"))
}
