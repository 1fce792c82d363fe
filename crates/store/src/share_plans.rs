//! Partners' share plans for [`PaymentRepo`](atrium_payments::PaymentRepo): one row per
//! version, never updated, and the sub-merchant tenants a change of rates applies to.
use crate::db::DbConn;
use crate::error::db_error;
use crate::ids_in::ids_in;
use crate::org::parse_enum;
use crate::org::tenants::partner_exists;
use crate::schema::{payment_configs, share_plans, tenants};
use crate::time::{DbTime, from_db, to_db};
use atrium_kernel::{Error, Id, Reason, Result, StrEnum};
use atrium_payments::{PaymentMode, Receiver, ReceiverType, SharePlan, SubMerchant, SubMerchantTenant};
use chrono::NaiveDateTime;
use diesel::prelude::*;
use std::collections::HashMap;

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = share_plans)]
struct PlanRow {
    partner_id: i64,
    version: i64,
    commission_bp: Option<i32>,
    platform_bp: Option<i32>,
    receiver_type: String,
    receiver_account: String,
    receiver_name: Option<String>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
}

fn plan_from_row(r: PlanRow) -> Result<SharePlan> {
    // The table's CHECKs keep the rates within 0–10,000.
    let bp = |v: Option<i32>| {
        v.map(|v| u32::try_from(v).map_err(|_| Error::internal(format!("share_plans holds a negative rate {v}")))).transpose()
    };
    Ok(SharePlan {
        partner_id: r.partner_id,
        version: r.version,
        commission_bp: bp(r.commission_bp)?,
        platform_bp: bp(r.platform_bp)?,
        receiver: Receiver {
            kind: parse_enum(&r.receiver_type, ReceiverType::parse, "receiver type")?,
            account: r.receiver_account,
            name: r.receiver_name,
        },
        created_at: from_db(r.created_at),
    })
}

fn plan_row(p: &SharePlan) -> Result<PlanRow> {
    let bp = |v: Option<u32>| v.map(|v| i32::try_from(v).map_err(|_| Error::invalid("basis_points", "must be at most 10000"))).transpose();
    Ok(PlanRow {
        partner_id: p.partner_id,
        version: p.version,
        commission_bp: bp(p.commission_bp)?,
        platform_bp: bp(p.platform_bp)?,
        receiver_type: p.receiver.kind.as_str().to_owned(),
        receiver_account: p.receiver.account.clone(),
        receiver_name: p.receiver.name.clone(),
        created_at: to_db(p.created_at),
    })
}

pub(crate) fn current_plan(conn: &mut DbConn, partner_id: Id) -> Result<Option<SharePlan>> {
    let row: Option<PlanRow> = share_plans::table
        .filter(share_plans::partner_id.eq(partner_id))
        .order(share_plans::version.desc())
        .select(PlanRow::as_select())
        .first(conn)
        .optional()
        .map_err(db_error)?;
    row.map(plan_from_row).transpose()
}

/// Inserts a new version; see [`PaymentRepo::put_share_plan`](atrium_payments::PaymentRepo::put_share_plan).
pub(crate) fn insert_plan(conn: &mut DbConn, plan: &SharePlan) -> Result<()> {
    if !partner_exists(conn, plan.partner_id)? {
        return Err(Error::NotFound("partner"));
    }
    diesel::insert_into(share_plans::table).values(plan_row(plan)?).execute(conn).map_err(|e| match db_error(e) {
        Error::Conflict(Reason::Duplicate, _) => Error::conflict(
            Reason::TryAgain,
            format!("the partner's share plan changed meanwhile (version {} exists); read it and try again", plan.version),
        ),
        other => other,
    })?;
    Ok(())
}

/// `(tenant_id, partner_id, sub_mchid, sub_appid)` of a tenant in sub-merchant mode.
type SubMerchantRow = (Id, Option<Id>, Option<String>, Option<String>);

/// The tenants in sub-merchant mode (of `partner_id` when given), with their partners'
/// current plans: two queries, whatever the number of tenants.
pub(crate) fn sub_merchant_tenants(conn: &mut DbConn, partner_id: Option<Id>) -> Result<Vec<SubMerchantTenant>> {
    let mut query = payment_configs::table
        .inner_join(tenants::table)
        .filter(payment_configs::mode.eq(PaymentMode::SubMerchant.as_str()))
        .select((payment_configs::tenant_id, tenants::partner_id, payment_configs::sub_mchid, payment_configs::sub_appid))
        .order(payment_configs::tenant_id)
        .into_boxed();
    if let Some(partner_id) = partner_id {
        query = query.filter(tenants::partner_id.eq(partner_id));
    }
    let rows: Vec<SubMerchantRow> = query.load(conn).map_err(db_error)?;
    let mut partner_ids: Vec<Id> = rows.iter().filter_map(|r| r.1).collect();
    partner_ids.sort_unstable();
    partner_ids.dedup();
    let mut plans: HashMap<Id, SharePlan> = HashMap::new();
    if !partner_ids.is_empty() {
        let all: Vec<PlanRow> = share_plans::table
            .filter(ids_in(conn, share_plans::partner_id, &partner_ids))
            .order((share_plans::partner_id, share_plans::version.desc()))
            .select(PlanRow::as_select())
            .load(conn)
            .map_err(db_error)?;
        for row in all {
            // Newest first: the first row of each partner is its current plan.
            if let std::collections::hash_map::Entry::Vacant(slot) = plans.entry(row.partner_id) {
                slot.insert(plan_from_row(row)?);
            }
        }
    }
    let mut out = Vec::with_capacity(rows.len());
    for (tenant_id, partner_id, sub_mchid, sub_appid) in rows {
        let sub_mchid = sub_mchid.ok_or_else(|| Error::internal(format!("tenant {tenant_id} is a sub-merchant without a sub_mchid")))?;
        out.push(SubMerchantTenant {
            tenant_id,
            partner_id,
            sub: SubMerchant { sub_mchid, sub_appid },
            plan: partner_id.and_then(|p| plans.get(&p).cloned()),
        });
    }
    Ok(out)
}
