//! Whether a party lets its users and API tokens in, from the partner and tenant rows.
use atrium_kernel::{Party, PartyStanding, PartyType, Result};
use diesel::prelude::*;

use crate::db::DbConn;
use crate::error::db_error;
use crate::schema::{partners, tenants};

/// The one rule, from the stored statuses of the party (`tenant` for a tenant party) and of
/// its partner (the partner itself, or the tenant's partner): a disabled or missing partner or
/// tenant is `Disabled`, a tenant of a disabled partner `PartnerDisabled`, a self-registered
/// tenant `Pending` until activated.
pub(crate) fn standing_of(party_type: PartyType, tenant: Option<&str>, partner: Option<&str>) -> PartyStanding {
    match party_type {
        PartyType::Platform => PartyStanding::Active,
        PartyType::Partner => match partner {
            Some("active") => PartyStanding::Active,
            _ => PartyStanding::Disabled(PartyType::Partner),
        },
        PartyType::Tenant => match (tenant, partner) {
            (Some("active" | "pending"), Some(p)) if p != "active" => PartyStanding::PartnerDisabled,
            (Some("pending"), _) => PartyStanding::Pending,
            (Some("active"), _) => PartyStanding::Active,
            _ => PartyStanding::Disabled(PartyType::Tenant),
        },
    }
}

/// The standing of `party`, read from its rows (for owners of API tokens).
pub(crate) fn party_standing(conn: &mut DbConn, party: Party) -> Result<PartyStanding> {
    let (tenant, partner): (Option<String>, Option<String>) = match party {
        Party::Platform => (None, None),
        Party::Partner { partner_id } => {
            (None, partners::table.find(partner_id).select(partners::status).first(conn).optional().map_err(db_error)?)
        }
        Party::Tenant { tenant_id, .. } => tenants::table
            .left_join(partners::table)
            .filter(tenants::id.eq(tenant_id))
            .select((tenants::status, partners::status.nullable()))
            .first::<(String, Option<String>)>(conn)
            .optional()
            .map_err(db_error)?
            .map_or((None, None), |(t, p)| (Some(t), p)),
    };
    Ok(standing_of(party.party_type(), tenant.as_deref(), partner.as_deref()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tenant_stands_by_its_own_status_and_its_partners() {
        use PartyStanding::*;
        let t = |tenant, partner| standing_of(PartyType::Tenant, tenant, partner);
        assert_eq!(t(Some("active"), None), Active);
        assert_eq!(t(Some("active"), Some("active")), Active);
        assert_eq!(t(Some("pending"), Some("active")), Pending);
        assert_eq!(t(Some("active"), Some("disabled")), PartnerDisabled);
        assert_eq!(t(Some("pending"), Some("disabled")), PartnerDisabled);
        assert_eq!(t(Some("disabled"), Some("active")), Disabled(PartyType::Tenant));
        assert_eq!(t(None, None), Disabled(PartyType::Tenant));
        assert_eq!(standing_of(PartyType::Partner, None, Some("disabled")), Disabled(PartyType::Partner));
        assert_eq!(standing_of(PartyType::Partner, None, None), Disabled(PartyType::Partner));
        assert_eq!(standing_of(PartyType::Platform, None, None), Active);
    }
}
