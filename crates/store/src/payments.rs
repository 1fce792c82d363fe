//! [`PaymentRepo`]: payment configurations (secrets encrypted), transactions, refunds and the
//! notifications already processed. A refund reservation is one write transaction holding the
//! transaction's row lock, so concurrent refunds never together exceed what was paid.
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn, first_for_update, on_backend};
use crate::discrepancies;
use crate::earnings;
use crate::error::db_error;
use crate::ids_in::{IN_LIST, ids_in};
use crate::org::parse_enum;
use crate::org::tenants::in_scope;
use crate::outbox;
use crate::schema::{
    orders, pay_provider, payment_configs, payment_notifications, payment_refunds, payment_share_returns, payment_shares,
    payment_transactions,
};
use crate::share_plans;
use crate::shares;
use crate::time::{DbTime, DbTimeOpt, from_db, to_db};
use async_trait::async_trait;
use atrium_kernel::Reason;
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Money, Page, Party, Result, Timestamp};
use atrium_payments::{
    Discrepancy, DiscrepancyQuery, Earner, EarningsGroup, EarningsRow, Effects, MerchantCredentials, NewDiscrepancy, PaymentConfig,
    PaymentMethod, PaymentMode, PaymentRepo, PaymentTenant, ProviderConfig, Refund, RefundReservation, RefundRule, RefundStatus,
    Resolution, ReturnStatus, Secret, Share, SharePlan, ShareQuery, ShareReturn, ShareStatus, Sharing, SubMerchantTenant, TradeState,
    Transaction, Unsettled, plan_returns,
};
use chrono::NaiveDateTime;
use diesel::prelude::*;

/// The payment ledger's repository over the database.
#[derive(Clone)]
pub struct PaymentStore {
    db: Db,
    cipher: FieldCipher,
}

impl PaymentStore {
    /// `cipher` is the one built from the master key (`FieldCipher::new`), as for the org store.
    pub fn new(db: Db, cipher: FieldCipher) -> Self {
        PaymentStore { db, cipher }
    }
}

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = payment_configs, primary_key(tenant_id), treat_none_as_null = true)]
struct ConfigRow {
    tenant_id: i64,
    mchid: String,
    appid: String,
    merchant_serial_no: Option<String>,
    #[diesel(deserialize_as = DbTimeOpt)]
    merchant_cert_not_after: Option<NaiveDateTime>,
    merchant_private_key_enc: Option<String>,
    merchant_key_fingerprint: Option<String>,
    api_v3_key_enc: Option<String>,
    platform_public_key_id: Option<String>,
    platform_public_key: Option<String>,
    platform_key_fingerprint: Option<String>,
    enabled: bool,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    mode: String,
    sub_mchid: Option<String>,
    sub_appid: Option<String>,
}

/// A merchant's keys as their columns hold them: the private key and the APIv3 key sealed.
/// Both the tenants' configurations and the provider's account store them so.
struct SealedCredentials {
    merchant_serial_no: Option<String>,
    merchant_cert_not_after: Option<NaiveDateTime>,
    merchant_private_key_enc: Option<String>,
    merchant_key_fingerprint: Option<String>,
    api_v3_key_enc: Option<String>,
    platform_public_key_id: Option<String>,
    platform_public_key: Option<String>,
    platform_key_fingerprint: Option<String>,
}

/// The key columns of a row that has them all ([`ConfigRow`], [`ProviderRow`]).
macro_rules! sealed_columns {
    ($row:expr) => {
        SealedCredentials {
            merchant_serial_no: $row.merchant_serial_no,
            merchant_cert_not_after: $row.merchant_cert_not_after,
            merchant_private_key_enc: $row.merchant_private_key_enc,
            merchant_key_fingerprint: $row.merchant_key_fingerprint,
            api_v3_key_enc: $row.api_v3_key_enc,
            platform_public_key_id: $row.platform_public_key_id,
            platform_public_key: $row.platform_public_key,
            platform_key_fingerprint: $row.platform_key_fingerprint,
        }
    };
}

fn seal(c: &MerchantCredentials, cipher: &FieldCipher) -> Result<SealedCredentials> {
    let seal = |s: &Option<Secret>| s.as_ref().map(|s| cipher.encrypt(s.expose())).transpose();
    Ok(SealedCredentials {
        merchant_serial_no: c.merchant_serial_no.clone(),
        merchant_cert_not_after: c.merchant_cert_not_after.map(to_db),
        merchant_private_key_enc: seal(&c.merchant_private_key)?,
        merchant_key_fingerprint: c.merchant_key_fingerprint.clone(),
        api_v3_key_enc: seal(&c.api_v3_key)?,
        platform_public_key_id: c.platform_public_key_id.clone(),
        platform_public_key: c.platform_public_key.clone(),
        platform_key_fingerprint: c.platform_key_fingerprint.clone(),
    })
}

fn unseal(c: SealedCredentials, cipher: &FieldCipher) -> Result<MerchantCredentials> {
    let open = |s: Option<String>| s.map(|s| cipher.decrypt(&s).map(Secret::new)).transpose();
    Ok(MerchantCredentials {
        merchant_serial_no: c.merchant_serial_no,
        merchant_cert_not_after: c.merchant_cert_not_after.map(from_db),
        merchant_private_key: open(c.merchant_private_key_enc)?,
        merchant_key_fingerprint: c.merchant_key_fingerprint,
        api_v3_key: open(c.api_v3_key_enc)?,
        platform_public_key_id: c.platform_public_key_id,
        platform_public_key: c.platform_public_key,
        platform_key_fingerprint: c.platform_key_fingerprint,
    })
}

fn config_row(c: &PaymentConfig, cipher: &FieldCipher) -> Result<ConfigRow> {
    let k = seal(&c.credentials, cipher)?;
    Ok(ConfigRow {
        tenant_id: c.tenant_id,
        mchid: c.mchid.clone(),
        appid: c.appid.clone(),
        merchant_serial_no: k.merchant_serial_no,
        merchant_cert_not_after: k.merchant_cert_not_after,
        merchant_private_key_enc: k.merchant_private_key_enc,
        merchant_key_fingerprint: k.merchant_key_fingerprint,
        api_v3_key_enc: k.api_v3_key_enc,
        platform_public_key_id: k.platform_public_key_id,
        platform_public_key: k.platform_public_key,
        platform_key_fingerprint: k.platform_key_fingerprint,
        enabled: c.enabled,
        created_at: to_db(c.created_at),
        updated_at: to_db(c.updated_at),
        mode: c.mode.as_str().to_owned(),
        sub_mchid: c.sub_mchid.clone(),
        sub_appid: c.sub_appid.clone(),
    })
}

fn config_from_row(r: ConfigRow, cipher: &FieldCipher) -> Result<PaymentConfig> {
    let credentials = unseal(sealed_columns!(r), cipher)?;
    Ok(PaymentConfig {
        tenant_id: r.tenant_id,
        mode: parse_enum(&r.mode, PaymentMode::parse, "payment mode")?,
        mchid: r.mchid,
        appid: r.appid,
        sub_mchid: r.sub_mchid,
        sub_appid: r.sub_appid,
        credentials,
        enabled: r.enabled,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

/// The one row of `pay_provider`.
const PROVIDER_ROW: i64 = 1;

#[derive(Queryable, Selectable, Insertable, AsChangeset)]
#[diesel(table_name = pay_provider, treat_none_as_null = true)]
struct ProviderRow {
    id: i64,
    sp_mchid: String,
    sp_appid: String,
    sp_name: Option<String>,
    merchant_serial_no: Option<String>,
    #[diesel(deserialize_as = DbTimeOpt)]
    merchant_cert_not_after: Option<NaiveDateTime>,
    merchant_private_key_enc: Option<String>,
    merchant_key_fingerprint: Option<String>,
    api_v3_key_enc: Option<String>,
    platform_public_key_id: Option<String>,
    platform_public_key: Option<String>,
    platform_key_fingerprint: Option<String>,
    enabled: bool,
    platform_bp: i32,
    default_commission_bp: i32,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
}

fn provider_row(c: &ProviderConfig, cipher: &FieldCipher) -> Result<ProviderRow> {
    let k = seal(&c.credentials, cipher)?;
    let bp = |v: u32| i32::try_from(v).map_err(|_| Error::invalid("basis_points", "must be at most 10000"));
    Ok(ProviderRow {
        id: PROVIDER_ROW,
        sp_mchid: c.sp_mchid.clone(),
        sp_appid: c.sp_appid.clone(),
        sp_name: c.sp_name.clone(),
        merchant_serial_no: k.merchant_serial_no,
        merchant_cert_not_after: k.merchant_cert_not_after,
        merchant_private_key_enc: k.merchant_private_key_enc,
        merchant_key_fingerprint: k.merchant_key_fingerprint,
        api_v3_key_enc: k.api_v3_key_enc,
        platform_public_key_id: k.platform_public_key_id,
        platform_public_key: k.platform_public_key,
        platform_key_fingerprint: k.platform_key_fingerprint,
        enabled: c.enabled,
        platform_bp: bp(c.platform_bp)?,
        default_commission_bp: bp(c.default_commission_bp)?,
        created_at: to_db(c.created_at),
        updated_at: to_db(c.updated_at),
    })
}

fn provider_from_row(r: ProviderRow, cipher: &FieldCipher) -> Result<ProviderConfig> {
    let credentials = unseal(sealed_columns!(r), cipher)?;
    // The table's CHECK keeps the rates within 0–10,000.
    let bp = |v: i32| u32::try_from(v).map_err(|_| Error::internal(format!("pay_provider holds a negative rate {v}")));
    Ok(ProviderConfig {
        sp_mchid: r.sp_mchid,
        sp_appid: r.sp_appid,
        sp_name: r.sp_name,
        credentials,
        enabled: r.enabled,
        platform_bp: bp(r.platform_bp)?,
        default_commission_bp: bp(r.default_commission_bp)?,
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payment_transactions, treat_none_as_null = true)]
pub(crate) struct TxRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    out_trade_no: String,
    description: String,
    amount: i64,
    openid: String,
    attach: Option<String>,
    prepay_id: Option<String>,
    trade_state: String,
    transaction_id: Option<String>,
    payer_total: Option<i64>,
    #[diesel(deserialize_as = DbTimeOpt)]
    success_time: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    expires_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    order_id: Option<i64>,
    method: String,
    reference: Option<String>,
    paid_by: Option<i64>,
    discrepancy: Option<String>,
    sub_mchid: Option<String>,
}

fn tx_row(t: &Transaction) -> TxRow {
    TxRow {
        id: t.id,
        tenant_id: t.tenant_id,
        out_trade_no: t.out_trade_no.clone(),
        description: t.description.clone(),
        amount: t.amount.fen(),
        openid: t.openid.clone(),
        attach: t.attach.clone(),
        prepay_id: t.prepay_id.clone(),
        trade_state: t.trade_state.as_str().to_owned(),
        transaction_id: t.transaction_id.clone(),
        payer_total: t.payer_total.map(Money::fen),
        success_time: t.success_time.map(to_db),
        expires_at: to_db(t.expires_at),
        created_at: to_db(t.created_at),
        updated_at: to_db(t.updated_at),
        order_id: t.order_id,
        method: t.method.as_str().to_owned(),
        reference: t.reference.clone(),
        paid_by: t.paid_by,
        discrepancy: t.discrepancy.clone(),
        sub_mchid: t.sub_mchid.clone(),
    }
}

pub(crate) fn tx_from_row(r: TxRow) -> Result<Transaction> {
    Ok(Transaction {
        id: r.id,
        tenant_id: r.tenant_id,
        out_trade_no: r.out_trade_no,
        order_id: r.order_id,
        method: parse_enum(&r.method, PaymentMethod::parse, "payment method")?,
        reference: r.reference,
        paid_by: r.paid_by,
        discrepancy: r.discrepancy,
        description: r.description,
        amount: Money::from_fen(r.amount),
        openid: r.openid,
        attach: r.attach,
        prepay_id: r.prepay_id,
        trade_state: parse_enum(&r.trade_state, TradeState::parse, "trade state")?,
        transaction_id: r.transaction_id,
        payer_total: r.payer_total.map(Money::from_fen),
        success_time: r.success_time.map(from_db),
        sub_mchid: r.sub_mchid,
        expires_at: from_db(r.expires_at),
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

#[derive(Queryable, Selectable, Insertable)]
#[diesel(table_name = payment_refunds, treat_none_as_null = true)]
struct RefundRow {
    #[diesel(skip_insertion)]
    id: i64,
    tenant_id: i64,
    payment_id: i64,
    out_trade_no: String,
    out_refund_no: String,
    refund_id: Option<String>,
    amount: i64,
    status: String,
    reason: Option<String>,
    #[diesel(deserialize_as = DbTimeOpt)]
    succeeded_at: Option<NaiveDateTime>,
    #[diesel(deserialize_as = DbTime)]
    created_at: NaiveDateTime,
    #[diesel(deserialize_as = DbTime)]
    updated_at: NaiveDateTime,
    order_id: Option<i64>,
    requested_by: Option<i64>,
    fail_reason: Option<String>,
}

fn refund_row(r: &Refund, payment_id: Id) -> RefundRow {
    RefundRow {
        id: r.id,
        tenant_id: r.tenant_id,
        payment_id,
        out_trade_no: r.out_trade_no.clone(),
        out_refund_no: r.out_refund_no.clone(),
        refund_id: r.refund_id.clone(),
        amount: r.amount.fen(),
        status: r.status.as_str().to_owned(),
        reason: r.reason.clone(),
        succeeded_at: r.succeeded_at.map(to_db),
        created_at: to_db(r.created_at),
        updated_at: to_db(r.updated_at),
        order_id: r.order_id,
        requested_by: r.requested_by,
        fail_reason: r.fail_reason.clone(),
    }
}

fn refund_from_row(r: RefundRow) -> Result<Refund> {
    Ok(Refund {
        id: r.id,
        tenant_id: r.tenant_id,
        out_trade_no: r.out_trade_no,
        order_id: r.order_id,
        out_refund_no: r.out_refund_no,
        refund_id: r.refund_id,
        amount: Money::from_fen(r.amount),
        status: parse_enum(&r.status, RefundStatus::parse, "refund status")?,
        reason: r.reason,
        requested_by: r.requested_by,
        fail_reason: r.fail_reason,
        succeeded_at: r.succeeded_at.map(from_db),
        created_at: from_db(r.created_at),
        updated_at: from_db(r.updated_at),
    })
}

fn refund_by_number(conn: &mut DbConn, tenant_id: Id, out_refund_no: &str) -> Result<Option<Refund>> {
    let row: Option<RefundRow> = payment_refunds::table
        .filter(payment_refunds::tenant_id.eq(tenant_id))
        .filter(payment_refunds::out_refund_no.eq(out_refund_no))
        .select(RefundRow::as_select())
        .first(conn)
        .optional()
        .map_err(db_error)?;
    row.map(refund_from_row).transpose()
}

/// The tenant's transaction `out_trade_no`, locked until the end of the write transaction:
/// `FOR UPDATE` on PostgreSQL; on SQLite the `BEGIN IMMEDIATE` of
/// [`Db::write`](crate::Db::write) already holds the database's one write lock.
fn lock_transaction(conn: &mut DbConn, tenant_id: Id, out_trade_no: &str) -> Result<Option<Transaction>> {
    let row: Option<TxRow> = first_for_update!(
        conn,
        payment_transactions::table
            .filter(payment_transactions::tenant_id.eq(tenant_id))
            .filter(payment_transactions::out_trade_no.eq(out_trade_no))
            .select(TxRow::as_select())
    )
    .map_err(db_error)?;
    row.map(tx_from_row).transpose()
}

pub(crate) fn refunds_of(conn: &mut DbConn, payment_id: Id) -> Result<Vec<Refund>> {
    let rows: Vec<RefundRow> = payment_refunds::table
        .filter(payment_refunds::payment_id.eq(payment_id))
        .order(payment_refunds::id.asc())
        .select(RefundRow::as_select())
        .load(conn)
        .map_err(db_error)?;
    rows.into_iter().map(refund_from_row).collect()
}

/// Inserts `refund` of transaction `payment_id` as it is; `Conflict` when its number is taken.
pub(crate) fn insert_refund_row(conn: &mut DbConn, refund: &Refund, payment_id: Id) -> Result<()> {
    diesel::insert_into(payment_refunds::table).values(refund_row(refund, payment_id)).execute(conn).map_err(db_error)?;
    Ok(())
}

fn reserve(conn: &mut DbConn, refund: Refund, rule: RefundRule, effects: &Effects) -> Result<RefundReservation> {
    // The lock first: from here on no other write of this transaction runs.
    let tx = lock_transaction(conn, refund.tenant_id, &refund.out_trade_no)?;
    if let Some(existing) = refund_by_number(conn, refund.tenant_id, &refund.out_refund_no)? {
        return Ok(RefundReservation::Existing(existing));
    }
    let Some(tx) = tx else {
        return Err(Error::NotFound("transaction"));
    };
    // The refund belongs to the transaction's order, whatever the caller said.
    let refund = Refund { order_id: tx.order_id, out_trade_no: tx.out_trade_no.clone(), ..refund };
    let existing = refunds_of(conn, tx.id)?;
    if let Err(why) = rule.check(&tx, &existing, &refund) {
        return Ok(RefundReservation::Refused(why));
    }
    // A shared transaction's receivers give their parts back first: planned now, under the lock.
    // Only a sub-merchant's payment is ever shared.
    let sharing = if tx.sub_mchid.is_some() { shares::sharing_of(conn, tx.id)? } else { None };
    let returns = match sharing {
        Some((sharing, shares)) => {
            let stored = shares::returns_of_payment(conn, tx.id)?;
            match plan_returns(tx.amount, &sharing, &shares, &stored, &existing, &refund) {
                Ok(planned) => planned,
                Err(why) => return Ok(RefundReservation::Refused(why)),
            }
        }
        None => Vec::new(),
    };
    let id: i64 = diesel::insert_into(payment_refunds::table)
        .values(refund_row(&refund, tx.id))
        .returning(payment_refunds::id)
        .get_result(conn)
        .map_err(db_error)?;
    for ret in &returns {
        shares::insert_return(conn, ret)?;
    }
    outbox::write(conn, effects)?;
    Ok(RefundReservation::Reserved(Refund { id, ..refund }))
}

/// Serialises, until the end of the write transaction, every insert of an order or a
/// transaction that would take the tenant's number `number`, so that neither can take the
/// other's (a PostgreSQL transaction-level advisory lock on a hash of both; SQLite's one
/// writer already serialises them). A unique index cannot span the two tables.
pub(crate) fn lock_number(conn: &mut DbConn, tenant_id: Id, number: &str) -> Result<()> {
    if let DbConn::Pg(c) = conn {
        use sha2::Digest;
        let digest = sha2::Sha256::digest(format!("{tenant_id}:{number}").as_bytes());
        let mut key = [0u8; 8];
        key.copy_from_slice(&digest[..8]);
        diesel::sql_query("SELECT pg_advisory_xact_lock($1)")
            .bind::<diesel::sql_types::BigInt, _>(i64::from_be_bytes(key))
            .execute(c)
            .map_err(db_error)?;
    }
    Ok(())
}

/// Stores a new transaction: refused when its number is taken, is an order's other than its
/// own, or its order already has a live transaction.
fn insert_transaction(conn: &mut DbConn, tx: Transaction, effects: &Effects) -> Result<Transaction> {
    lock_number(conn, tx.tenant_id, &tx.out_trade_no)?;
    let owner: Option<i64> = orders::table
        .filter(orders::tenant_id.eq(tx.tenant_id))
        .filter(orders::order_no.eq(&tx.out_trade_no))
        .select(orders::id)
        .first(conn)
        .optional()
        .map_err(db_error)?;
    if let Some(order_id) = owner.filter(|id| Some(*id) != tx.order_id) {
        return Err(Error::conflict(
            Reason::WrongRoute,
            format!("out_trade_no {} is the number of order {order_id}; pay it through /api/v1/orders/{order_id}/pay", tx.out_trade_no),
        ));
    }
    if let Some(order_id) = tx.order_id {
        let live: i64 = payment_transactions::table
            .filter(payment_transactions::tenant_id.eq(tx.tenant_id))
            .filter(payment_transactions::order_id.eq(order_id))
            .filter(payment_transactions::trade_state.ne_all(["CLOSED", "REVOKED"]))
            .count()
            .get_result(conn)
            .map_err(db_error)?;
        if live > 0 {
            return Err(Error::conflict(Reason::Duplicate, format!("order {order_id} already has a payment")));
        }
    }
    // The unique indexes decide races the reads above cannot see (PostgreSQL).
    let id: i64 =
        diesel::insert_into(payment_transactions::table).values(tx_row(&tx)).returning(payment_transactions::id).get_result(conn).map_err(
            |e| match db_error(e) {
                Error::Conflict(..) => match tx.order_id {
                    Some(order_id) => Error::conflict(
                        Reason::Duplicate,
                        format!("order {order_id} already has a payment, or out_trade_no {} is used", tx.out_trade_no),
                    ),
                    None => Error::conflict(Reason::Duplicate, format!("out_trade_no {} is already used", tx.out_trade_no)),
                },
                other => other,
            },
        )?;
    outbox::write(conn, effects)?;
    Ok(Transaction { id, ..tx })
}

/// How many of the tenant's platform transactions are not final (unpaid, neither closed nor
/// holding a discrepancy) and how many of its refunds are processing.
fn unfinished(conn: &mut DbConn, tenant_id: Id) -> Result<u64> {
    let transactions: i64 = payment_transactions::table
        .filter(payment_transactions::tenant_id.eq(tenant_id))
        .filter(payment_transactions::method.eq(PaymentMethod::WechatJsapi.as_str()))
        .filter(
            payment_transactions::trade_state
                .eq_any([TradeState::NotPay, TradeState::UserPaying, TradeState::PayError].map(|s| s.as_str())),
        )
        .filter(payment_transactions::discrepancy.is_null())
        .count()
        .get_result(conn)
        .map_err(db_error)?;
    let refunds: i64 = payment_refunds::table
        .filter(payment_refunds::tenant_id.eq(tenant_id))
        .filter(payment_refunds::status.eq(RefundStatus::Processing.as_str()))
        .count()
        .get_result(conn)
        .map_err(db_error)?;
    Ok(u64::try_from(transactions + refunds).unwrap_or(0))
}

#[async_trait]
impl PaymentRepo for PaymentStore {
    async fn tenant(&self, scope: Party, tenant_id: Id) -> Result<Option<PaymentTenant>> {
        self.db.run(move |conn| Ok(in_scope(conn, scope, tenant_id)?.map(|(id, partner_id)| PaymentTenant { id, partner_id }))).await
    }

    async fn get_config(&self, tenant_id: Id) -> Result<Option<PaymentConfig>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<ConfigRow> =
                    payment_configs::table.find(tenant_id).select(ConfigRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(|r| config_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn put_config(&self, config: PaymentConfig, effects: Effects, settled_first: bool) -> Result<PaymentConfig> {
        let row = config_row(&config, &self.cipher)?;
        self.db
            .write(move |conn| {
                if settled_first {
                    let open = unfinished(conn, config.tenant_id)?;
                    if open > 0 {
                        return Err(Error::conflict(
                            Reason::State,
                            format!("{open} payments or refunds of the tenant are not final yet; switch the mode once they are"),
                        ));
                    }
                }
                on_backend!(conn, |c| diesel::insert_into(payment_configs::table)
                    .values(&row)
                    .on_conflict(payment_configs::tenant_id)
                    .do_update()
                    .set(&row)
                    .execute(c))
                .map_err(|e| match db_error(e) {
                    // The one unique index besides the key.
                    Error::Conflict(Reason::Duplicate, _) => Error::conflict(
                        Reason::Duplicate,
                        format!("sub_mchid {} is another tenant's sub-merchant", row.sub_mchid.as_deref().unwrap_or_default()),
                    ),
                    other => other,
                })?;
                outbox::write(conn, &effects)?;
                Ok(config)
            })
            .await
    }

    async fn unfinished(&self, tenant_id: Id) -> Result<u64> {
        self.db.run(move |conn| unfinished(conn, tenant_id)).await
    }

    async fn get_provider(&self) -> Result<Option<ProviderConfig>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let row: Option<ProviderRow> =
                    pay_provider::table.find(PROVIDER_ROW).select(ProviderRow::as_select()).first(conn).optional().map_err(db_error)?;
                row.map(|r| provider_from_row(r, &cipher)).transpose()
            })
            .await
    }

    async fn put_provider(&self, config: ProviderConfig, effects: Effects) -> Result<ProviderConfig> {
        let row = provider_row(&config, &self.cipher)?;
        self.db
            .write(move |conn| {
                on_backend!(conn, |c| diesel::insert_into(pay_provider::table)
                    .values(&row)
                    .on_conflict(pay_provider::id)
                    .do_update()
                    .set(&row)
                    .execute(c))
                .map_err(db_error)?;
                outbox::write(conn, &effects)?;
                Ok(config)
            })
            .await
    }

    async fn partner(&self, scope: Party, partner_id: Id) -> Result<bool> {
        self.db.run(move |conn| Ok(crate::org::partners::get(conn, scope, partner_id)?.is_some())).await
    }

    async fn share_plan(&self, partner_id: Id) -> Result<Option<SharePlan>> {
        self.db.run(move |conn| share_plans::current_plan(conn, partner_id)).await
    }

    async fn put_share_plan(&self, plan: SharePlan, effects: Effects) -> Result<SharePlan> {
        self.db
            .write(move |conn| {
                share_plans::insert_plan(conn, &plan)?;
                outbox::write(conn, &effects)?;
                Ok(plan)
            })
            .await
    }

    async fn sub_merchant_tenants(&self, partner_id: Option<Id>) -> Result<Vec<SubMerchantTenant>> {
        self.db.run(move |conn| share_plans::sub_merchant_tenants(conn, partner_id)).await
    }

    async fn sharing(&self, payment_id: Id) -> Result<Option<(Sharing, Vec<Share>)>> {
        self.db.run(move |conn| shares::sharing_of(conn, payment_id)).await
    }

    async fn begin_sharing(&self, sharing: Sharing, new: Vec<Share>) -> Result<(Sharing, Vec<Share>)> {
        self.db.write(move |conn| shares::begin(conn, &sharing, &new)).await
    }

    async fn update_shares(&self, changed: Vec<Share>, read: Vec<(ShareStatus, String)>, effects: Effects) -> Result<u64> {
        self.db.write(move |conn| shares::update(conn, &changed, &read, &effects)).await
    }

    async fn set_unfrozen(&self, payment_id: Id, at: Timestamp) -> Result<()> {
        self.db.write(move |conn| shares::set_unfrozen(conn, payment_id, at)).await
    }

    async fn get_share(&self, scope: Party, id: Id) -> Result<Option<Share>> {
        self.db.run(move |conn| shares::get(conn, scope, id)).await
    }

    async fn list_shares(&self, scope: Party, query: ShareQuery) -> Result<Page<Share>> {
        self.db.run(move |conn| shares::list(conn, scope, &query)).await
    }

    async fn shares_in_order(&self, tenant_id: Id, out_order_no: String) -> Result<Vec<Share>> {
        self.db.run(move |conn| shares::in_order(conn, tenant_id, &out_order_no)).await
    }

    async fn retry_share(&self, read: Share, out_order_no: String, at: Timestamp, effects: Effects) -> Result<Option<Share>> {
        self.db.write(move |conn| shares::retry(conn, &read, out_order_no, at, &effects)).await
    }

    async fn returns_of(&self, tenant_id: Id, out_refund_no: String) -> Result<Vec<ShareReturn>> {
        self.db.run(move |conn| shares::returns_of_refund(conn, tenant_id, &out_refund_no)).await
    }

    async fn settle_return(&self, ret: ShareReturn, read: ReturnStatus) -> Result<bool> {
        self.db.write(move |conn| shares::settle_return(conn, &ret, read)).await
    }

    async fn earnings(
        &self,
        earner: Earner,
        from: chrono::NaiveDate,
        to: chrono::NaiveDate,
        group: EarningsGroup,
    ) -> Result<Vec<EarningsRow>> {
        self.db.run(move |conn| earnings::earnings(conn, earner, from, to, group)).await
    }

    async fn shares_changed(&self, tenant_id: Id, from: Timestamp, to: Timestamp, after_payment: Id, payments: u32) -> Result<Vec<Share>> {
        self.db.run(move |conn| shares::changed(conn, tenant_id, from, to, after_payment, payments)).await
    }

    async fn returns_changed(&self, tenant_id: Id, from: Timestamp, to: Timestamp, after: Id, limit: u32) -> Result<Vec<ShareReturn>> {
        self.db.run(move |conn| shares::returns_changed(conn, tenant_id, from, to, after, limit)).await
    }

    async fn share_discrepancy(&self, read: Share, found: NewDiscrepancy, effects: Effects) -> Result<bool> {
        self.db.write(move |conn| shares::record_discrepancy(conn, &read, &found, &effects)).await
    }

    async fn get_discrepancy(&self, scope: Party, id: Id) -> Result<Option<Discrepancy>> {
        self.db.run(move |conn| discrepancies::get(conn, scope, id)).await
    }

    async fn list_discrepancies(&self, scope: Party, query: DiscrepancyQuery) -> Result<Page<Discrepancy>> {
        self.db.run(move |conn| discrepancies::list(conn, scope, &query)).await
    }

    async fn discrepancies_of(&self, payment_id: Id) -> Result<Vec<Discrepancy>> {
        self.db.run(move |conn| discrepancies::of_payment(conn, payment_id)).await
    }

    async fn get_return(&self, tenant_id: Id, id: Id) -> Result<Option<ShareReturn>> {
        self.db.run(move |conn| shares::get_return(conn, tenant_id, id)).await
    }

    async fn resolve_discrepancy(&self, resolution: Resolution) -> Result<bool> {
        self.db.write(move |conn| discrepancies::resolve(conn, &resolution)).await
    }

    async fn insert_transaction(&self, tx: Transaction, effects: Effects) -> Result<Transaction> {
        self.db.write(move |conn| insert_transaction(conn, tx, &effects)).await
    }

    async fn get_transaction(&self, tenant_id: Id, out_trade_no: String) -> Result<Option<Transaction>> {
        self.db
            .run(move |conn| {
                let row: Option<TxRow> = payment_transactions::table
                    .filter(payment_transactions::tenant_id.eq(tenant_id))
                    .filter(payment_transactions::out_trade_no.eq(&out_trade_no))
                    .select(TxRow::as_select())
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                row.map(tx_from_row).transpose()
            })
            .await
    }

    async fn order_transaction(&self, tenant_id: Id, order_id: Id) -> Result<Option<Transaction>> {
        self.db
            .run(move |conn| {
                let rows: Vec<TxRow> = payment_transactions::table
                    .filter(payment_transactions::tenant_id.eq(tenant_id))
                    .filter(payment_transactions::order_id.eq(order_id))
                    .order(payment_transactions::id.desc())
                    .select(TxRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                let live = rows.iter().position(|r| !matches!(r.trade_state.as_str(), "CLOSED" | "REVOKED"));
                rows.into_iter().nth(live.unwrap_or(0)).map(tx_from_row).transpose()
            })
            .await
    }

    async fn update_transaction(
        &self,
        tx: Transaction,
        read_state: TradeState,
        found: Option<NewDiscrepancy>,
        effects: Effects,
    ) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    payment_transactions::table
                        .filter(payment_transactions::tenant_id.eq(tx.tenant_id))
                        .filter(payment_transactions::out_trade_no.eq(&tx.out_trade_no))
                        .filter(payment_transactions::trade_state.eq(read_state.as_str())),
                )
                .set((
                    payment_transactions::prepay_id.eq(&tx.prepay_id),
                    payment_transactions::trade_state.eq(tx.trade_state.as_str()),
                    payment_transactions::transaction_id.eq(&tx.transaction_id),
                    payment_transactions::payer_total.eq(tx.payer_total.map(Money::fen)),
                    payment_transactions::success_time.eq(tx.success_time.map(to_db)),
                    // A discrepancy once recorded stays.
                    payment_transactions::discrepancy.eq(diesel::dsl::sql::<diesel::sql_types::Nullable<diesel::sql_types::Text>>(
                        "COALESCE(discrepancy, ",
                    )
                    .bind::<diesel::sql_types::Nullable<diesel::sql_types::Text>, _>(tx.discrepancy.clone())
                    .sql(")")),
                    payment_transactions::updated_at.eq(to_db(tx.updated_at)),
                ))
                .execute(conn)
                .map_err(db_error)?;
                if n > 0 {
                    if let Some(found) = &found {
                        discrepancies::record(conn, found)?;
                    }
                    outbox::write(conn, &effects)?;
                }
                Ok(n > 0)
            })
            .await
    }

    async fn reserve_refund(&self, refund: Refund, rule: RefundRule, effects: Effects) -> Result<RefundReservation> {
        self.db.write(move |conn| reserve(conn, refund, rule, &effects)).await
    }

    async fn get_refund(&self, tenant_id: Id, out_refund_no: String) -> Result<Option<Refund>> {
        self.db.run(move |conn| refund_by_number(conn, tenant_id, &out_refund_no)).await
    }

    async fn refunds_of(&self, tenant_id: Id, out_trade_no: String) -> Result<Vec<Refund>> {
        self.db
            .run(move |conn| {
                let rows: Vec<RefundRow> = payment_refunds::table
                    .filter(payment_refunds::tenant_id.eq(tenant_id))
                    .filter(payment_refunds::out_trade_no.eq(&out_trade_no))
                    .order(payment_refunds::id.asc())
                    .select(RefundRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(refund_from_row).collect()
            })
            .await
    }

    async fn refunds_of_orders(&self, order_ids: Vec<Id>) -> Result<Vec<Refund>> {
        self.db
            .run(move |conn| {
                let mut refunds = Vec::new();
                for chunk in order_ids.chunks(IN_LIST) {
                    let rows: Vec<RefundRow> = payment_refunds::table
                        .filter(ids_in(conn, payment_refunds::order_id, chunk))
                        .order((payment_refunds::order_id.asc(), payment_refunds::id.asc()))
                        .select(RefundRow::as_select())
                        .load(conn)
                        .map_err(db_error)?;
                    for r in rows {
                        refunds.push(refund_from_row(r)?);
                    }
                }
                Ok(refunds)
            })
            .await
    }

    async fn shares_of_orders(&self, order_ids: Vec<Id>) -> Result<Vec<(Id, Share)>> {
        self.db.run(move |conn| shares::of_orders(conn, &order_ids)).await
    }

    async fn update_refund(&self, refund: Refund, read_status: RefundStatus, effects: Effects) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(
                    payment_refunds::table
                        .filter(payment_refunds::tenant_id.eq(refund.tenant_id))
                        .filter(payment_refunds::out_refund_no.eq(&refund.out_refund_no))
                        .filter(payment_refunds::status.eq(read_status.as_str())),
                )
                .set((
                    payment_refunds::refund_id.eq(&refund.refund_id),
                    payment_refunds::status.eq(refund.status.as_str()),
                    payment_refunds::fail_reason.eq(&refund.fail_reason),
                    payment_refunds::succeeded_at.eq(refund.succeeded_at.map(to_db)),
                    payment_refunds::updated_at.eq(to_db(refund.updated_at)),
                ))
                .execute(conn)
                .map_err(db_error)?;
                if n > 0 {
                    outbox::write(conn, &effects)?;
                }
                Ok(n > 0)
            })
            .await
    }

    async fn unsettled(&self, before: Timestamp, limit: u32) -> Result<Unsettled> {
        self.db
            .run(move |conn| {
                let transactions: Vec<(i64, String, NaiveDateTime)> = payment_transactions::table
                    .filter(
                        payment_transactions::trade_state
                            .eq_any([TradeState::NotPay, TradeState::UserPaying, TradeState::PayError].map(|s| s.as_str())),
                    )
                    .filter(payment_transactions::expires_at.lt(to_db(before)))
                    .filter(payment_transactions::discrepancy.is_null())
                    .filter(payment_transactions::method.eq(PaymentMethod::WechatJsapi.as_str()))
                    // One whose settle job failed for good waits for a person (it shows in
                    // atrium_jobs_failed_total and the jobs table): not queued again and again.
                    .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(
                        "NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.kind = 'payment.settle_transaction' AND jobs.status = 'failed' \
                         AND jobs.dedupe_key = CAST(payment_transactions.tenant_id AS TEXT) || ':' || payment_transactions.out_trade_no)",
                    ))
                    .order(payment_transactions::expires_at.asc())
                    .limit(i64::from(limit))
                    .select((payment_transactions::tenant_id, payment_transactions::out_trade_no, payment_transactions::expires_at))
                    .load(conn)
                    .map_err(db_error)?;
                let refunds: Vec<(i64, String)> = payment_refunds::table
                    .filter(payment_refunds::status.eq(RefundStatus::Processing.as_str()))
                    .filter(payment_refunds::created_at.lt(to_db(before)))
                    .filter(diesel::dsl::sql::<diesel::sql_types::Bool>(
                        "NOT EXISTS (SELECT 1 FROM jobs WHERE jobs.kind = 'payment.settle_refund' AND jobs.status = 'failed' \
                         AND jobs.dedupe_key = CAST(payment_refunds.tenant_id AS TEXT) || ':' || payment_refunds.out_refund_no)",
                    ))
                    .order(payment_refunds::created_at.asc())
                    .limit(i64::from(limit))
                    .select((payment_refunds::tenant_id, payment_refunds::out_refund_no))
                    .load(conn)
                    .map_err(db_error)?;
                Ok(Unsettled { transactions: transactions.into_iter().map(|(t, no, at)| (t, no, from_db(at))).collect(), refunds })
            })
            .await
    }

    async fn open_discrepancies(&self) -> Result<u64> {
        self.db
            .run(move |conn| {
                let n: i64 = payment_transactions::table
                    .filter(payment_transactions::discrepancy.is_not_null())
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                let shares = shares::open_discrepancies(conn)?;
                Ok(u64::try_from(n + shares).unwrap_or(0))
            })
            .await
    }

    async fn notification_seen(&self, tenant_id: Id, event_id: String) -> Result<bool> {
        self.db
            .run(move |conn| {
                let n: i64 = payment_notifications::table
                    .filter(payment_notifications::tenant_id.eq(tenant_id))
                    .filter(payment_notifications::event_id.eq(&event_id))
                    .count()
                    .get_result(conn)
                    .map_err(db_error)?;
                Ok(n > 0)
            })
            .await
    }

    async fn record_notification(&self, tenant_id: Id, event_id: String, event_type: String, at: Timestamp) -> Result<()> {
        self.db
            .write(move |conn| {
                let values = (
                    payment_notifications::tenant_id.eq(tenant_id),
                    payment_notifications::event_id.eq(&event_id),
                    payment_notifications::event_type.eq(&event_type),
                    payment_notifications::received_at.eq(to_db(at)),
                );
                on_backend!(conn, |c| diesel::insert_into(payment_notifications::table)
                    .values(values)
                    .on_conflict((payment_notifications::tenant_id, payment_notifications::event_id))
                    .do_nothing()
                    .execute(c))
                .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn paid_between(&self, tenant_id: Id, from: Timestamp, to: Timestamp) -> Result<Vec<Transaction>> {
        self.db
            .run(move |conn| {
                let rows: Vec<TxRow> = payment_transactions::table
                    .filter(payment_transactions::tenant_id.eq(tenant_id))
                    .filter(payment_transactions::success_time.ge(to_db(from)))
                    .filter(payment_transactions::success_time.lt(to_db(to)))
                    .order(payment_transactions::id.asc())
                    .select(TxRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(tx_from_row).collect()
            })
            .await
    }

    async fn tenants_with_activity(&self, from: Timestamp, to: Timestamp) -> Result<Vec<Id>> {
        self.db
            .run(move |conn| {
                let mut tenants: Vec<Id> = payment_transactions::table
                    .filter(payment_transactions::created_at.lt(to_db(to)))
                    .filter(payment_transactions::updated_at.ge(to_db(from)))
                    .select(payment_transactions::tenant_id)
                    .distinct()
                    .load(conn)
                    .map_err(db_error)?;
                let refunding: Vec<Id> = payment_refunds::table
                    .filter(payment_refunds::created_at.lt(to_db(to)))
                    .filter(payment_refunds::updated_at.ge(to_db(from)))
                    .select(payment_refunds::tenant_id)
                    .distinct()
                    .load(conn)
                    .map_err(db_error)?;
                tenants.extend(refunding);
                // Shares and returns change days after their payment (a retry, a late settle).
                let sharing: Vec<Id> = payment_shares::table
                    .filter(payment_shares::updated_at.ge(to_db(from)))
                    .filter(payment_shares::updated_at.lt(to_db(to)))
                    .select(payment_shares::tenant_id)
                    .distinct()
                    .load(conn)
                    .map_err(db_error)?;
                tenants.extend(sharing);
                let returning: Vec<Id> = payment_share_returns::table
                    .filter(payment_share_returns::updated_at.ge(to_db(from)))
                    .filter(payment_share_returns::updated_at.lt(to_db(to)))
                    .select(payment_share_returns::tenant_id)
                    .distinct()
                    .load(conn)
                    .map_err(db_error)?;
                tenants.extend(returning);
                tenants.sort_unstable();
                tenants.dedup();
                Ok(tenants)
            })
            .await
    }

    async fn transactions_by_numbers(&self, tenant_id: Id, out_trade_nos: Vec<String>) -> Result<Vec<Transaction>> {
        if out_trade_nos.is_empty() {
            return Ok(vec![]);
        }
        self.db
            .run(move |conn| {
                let mut out = Vec::with_capacity(out_trade_nos.len());
                for chunk in out_trade_nos.chunks(IN_LIST) {
                    let rows: Vec<TxRow> = payment_transactions::table
                        .filter(payment_transactions::tenant_id.eq(tenant_id))
                        .filter(payment_transactions::out_trade_no.eq_any(chunk))
                        .order(payment_transactions::id.asc())
                        .select(TxRow::as_select())
                        .load(conn)
                        .map_err(db_error)?;
                    for r in rows {
                        out.push(tx_from_row(r)?);
                    }
                }
                Ok(out)
            })
            .await
    }

    async fn refunds_succeeded_between(&self, tenant_id: Id, from: Timestamp, to: Timestamp) -> Result<Vec<Refund>> {
        self.db
            .run(move |conn| {
                let rows: Vec<RefundRow> = payment_refunds::table
                    .filter(payment_refunds::tenant_id.eq(tenant_id))
                    .filter(payment_refunds::succeeded_at.ge(to_db(from)))
                    .filter(payment_refunds::succeeded_at.lt(to_db(to)))
                    .order(payment_refunds::id.asc())
                    .select(RefundRow::as_select())
                    .load(conn)
                    .map_err(db_error)?;
                rows.into_iter().map(refund_from_row).collect()
            })
            .await
    }

    async fn refunds_by_numbers(&self, tenant_id: Id, out_refund_nos: Vec<String>) -> Result<Vec<Refund>> {
        if out_refund_nos.is_empty() {
            return Ok(vec![]);
        }
        self.db
            .run(move |conn| {
                let mut out = Vec::with_capacity(out_refund_nos.len());
                for chunk in out_refund_nos.chunks(IN_LIST) {
                    let rows: Vec<RefundRow> = payment_refunds::table
                        .filter(payment_refunds::tenant_id.eq(tenant_id))
                        .filter(payment_refunds::out_refund_no.eq_any(chunk))
                        .order(payment_refunds::id.asc())
                        .select(RefundRow::as_select())
                        .load(conn)
                        .map_err(db_error)?;
                    for r in rows {
                        out.push(refund_from_row(r)?);
                    }
                }
                Ok(out)
            })
            .await
    }
}
