//! What clients send and receive for orders: the create, pay and refund bodies, the list
//! parameters and the order view. Money is fen throughout.
use crate::lifecycle::OrderStatus;
use crate::model::*;
use crate::ports::OrderRefund;
use crate::text::{Openid, RefundReason, Subject};
use atrium_kernel::pay::ShareView;
use atrium_kernel::{Error, Id, ListQuery, Money, Name, PayParams, RefundStatus, Text};
use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

/// An offline payment's reference: a bank transfer's number, a receipt number.
pub type PaymentReference = Text<64>;

/// One line of a new order.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(as = OrderItemInput, example = json!({"name": "Coffee beans 500 g", "quantity": 2, "unit_price": 4400})))]
pub struct ItemInput {
    /// What is sold, shown to the payer; 1–128 characters.
    pub name: Name,
    /// At least 1.
    #[cfg_attr(feature = "openapi", schema(minimum = 1, maximum = 1_000_000))]
    pub quantity: i64,
    /// Fen.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 0, maximum = 1_000_000_000_000_i64))]
    pub unit_price: Money,
}

/// `POST /orders`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"tenant_id": 1, "subject": "Coffee beans", "items": [{"name": "Coffee beans 500 g", "quantity": 2, "unit_price": 4400}], "openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o", "expires_in": 1800})))]
pub struct NewOrder {
    /// The order's tenant. Platform and partner callers must name it (400 without, 404 if out
    /// of their scope); a tenant caller may leave it out for its own.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1))]
    pub tenant_id: Option<Id>,
    /// 1–127 bytes; the pay platform shows it to the payer.
    pub subject: Subject,
    /// Fen, at least 1. Required without `items`; with them, it must equal their sum.
    #[cfg_attr(feature = "openapi", schema(value_type = Option<i64>, minimum = 1, maximum = 1_000_000_000_000_i64))]
    pub amount: Option<Money>,
    /// The order's lines; the amount is the sum of `quantity × unit_price`.
    #[cfg_attr(feature = "openapi", schema(min_items = 1, max_items = 100))]
    pub items: Option<Vec<ItemInput>>,
    /// The payer, when known now; a JSAPI payment needs it here or in the pay request.
    pub openid: Option<Openid>,
    /// Seconds the order can be paid for: 60 to 604800 (seven days), default 1800.
    #[cfg_attr(feature = "openapi", schema(minimum = 60, maximum = 604_800))]
    pub expires_in: Option<i64>,
}

/// `POST /orders/{id}/pay`, by `method` (the document shows one schema per method, each
/// refusing other fields, as the parser does).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "method", rename_all = "snake_case", deny_unknown_fields)]
pub enum PayOrder {
    /// A JSAPI payment in the tenant's mini-program: answers what `wx.requestPayment` needs.
    /// Paying again while the order is `paying` answers the same payment.
    WechatJsapi {
        /// The payer; the order's own openid when absent (409 `payer_openid_missing` if it has none).
        openid: Option<Openid>,
    },
    /// A payment outside the platform (bank transfer, cash): the order is `paid` at once,
    /// recording who recorded it and `reference`.
    Offline {
        /// What identifies the payment: a bank transfer's number, a receipt number.
        reference: PaymentReference,
    },
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for PayOrder {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        use serde_json::json;
        let inline = |s| serde_json::to_value(s).unwrap_or_else(|_| json!({"type": "string"}));
        let openid = inline(Openid::schema());
        let reference = inline(<PaymentReference as utoipa::PartialSchema>::schema());
        atrium_kernel::schema::schema_from_json(json!({
            "description": "A pay request: `wechat_jsapi` (a payment in the tenant's mini-program; answers what `wx.requestPayment` needs, the same again while the order is `paying`) or `offline` (a payment outside the platform, recorded at once with its `reference`)",
            "example": {"method": "wechat_jsapi", "openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"},
            "oneOf": [
                {
                    "type": "object",
                    "title": "wechat_jsapi",
                    "required": ["method"],
                    "additionalProperties": false,
                    "properties": {
                        "method": {"type": "string", "enum": ["wechat_jsapi"]},
                        "openid": {
                            "description": "The payer; the order's own openid when absent (409 `payer_openid_missing` if it has none)",
                            "oneOf": [openid, {"type": "null"}],
                        },
                    },
                },
                {
                    "type": "object",
                    "title": "offline",
                    "required": ["method", "reference"],
                    "additionalProperties": false,
                    "properties": {
                        "method": {"type": "string", "enum": ["offline"]},
                        "reference": reference,
                    },
                },
            ],
        }))
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for PayOrder {}

/// `POST /orders/{id}/refund`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
#[cfg_attr(feature = "openapi", schema(example = json!({"amount": 3000, "reason": "Damaged in transit"})))]
pub struct NewRefund {
    /// Fen, at least 1, at most what is left to refund.
    #[cfg_attr(feature = "openapi", schema(value_type = i64, minimum = 1, maximum = 1_000_000_000_000_i64))]
    pub amount: Money,
    /// Up to 80 bytes, shown to the payer.
    pub reason: Option<RefundReason>,
}

/// `GET /orders` parameters.
#[derive(Debug, Default, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::IntoParams), into_params(parameter_in = Query))]
#[serde(deny_unknown_fields)]
pub struct OrderListParams {
    /// 1-based page number; default 1.
    pub page: Option<i64>,
    /// Orders per page; default 20, at most 100.
    pub page_size: Option<i64>,
    /// Matches the order number or the subject.
    pub keyword: Option<String>,
    /// Only orders in this status.
    pub status: Option<OrderStatus>,
    /// Only this tenant's orders (platform and partner users).
    pub tenant_id: Option<i64>,
    /// Only orders of this partner's tenants (platform users).
    pub partner_id: Option<i64>,
    /// RFC 3339; orders created at or after.
    pub created_from: Option<DateTime<Utc>>,
    /// RFC 3339; orders created before.
    pub created_to: Option<DateTime<Utc>>,
    /// `id`, `created_at`, `amount` or `expires_at`, `-` for descending; default `-id`.
    #[cfg_attr(feature = "openapi", param(schema_with = atrium_kernel::schema::sort::<crate::model::OrderSort>))]
    pub sort: Option<String>,
}

/// The query the parameters ask for; a bad page, sort or time range is `Invalid`, naming it.
impl TryFrom<OrderListParams> for OrderQuery {
    type Error = Error;

    fn try_from(p: OrderListParams) -> Result<OrderQuery, Error> {
        let list = ListQuery::parse(p.page, p.page_size, p.keyword, p.sort.as_deref())?;
        if let (Some(from), Some(to)) = (p.created_from, p.created_to)
            && from > to
        {
            return Err(Error::invalid("created_to", "must not be before created_from"));
        }
        Ok(OrderQuery {
            list,
            status: p.status,
            tenant_id: p.tenant_id,
            partner_id: p.partner_id,
            created_from: p.created_from,
            created_to: p.created_to,
        })
    }
}

/// One line of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrderItemView {
    /// What is sold.
    pub name: String,
    /// How many.
    pub quantity: i64,
    /// Fen.
    pub unit_price: Money,
}

/// How an order was paid.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PaymentView {
    /// `wechat_jsapi` (the pay platform) or `offline`.
    pub method: PaymentMethod,
    /// The pay platform's order number; null for an offline payment.
    pub out_trade_no: Option<String>,
    /// The pay platform's transaction id, once paid.
    pub transaction_id: Option<String>,
    /// When the payment was confirmed; null until paid.
    pub paid_at: Option<DateTime<Utc>>,
    /// An offline payment's reference.
    pub reference: Option<String>,
    /// The user who recorded an offline payment.
    pub paid_by: Option<Id>,
}

/// A refund of an order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema), schema(as = OrderRefund))]
pub struct RefundView {
    /// The refund's id.
    pub id: Id,
    /// Our refund number at the pay platform, unique per tenant.
    pub out_refund_no: String,
    /// Fen.
    pub amount: Money,
    /// `processing` until the pay platform settles it, then `succeeded`, `failed` or `closed`.
    pub status: RefundStatus,
    /// The reason given, shown to the payer.
    pub reason: Option<String>,
    /// The user who asked for it; null when the system did.
    pub requested_by: Option<Id>,
    /// Why it failed, when known: a share of the payment could not be taken back from its
    /// receiver first (the pay platform's `fail_reason`). Null otherwise.
    pub fail_reason: Option<String>,
    /// When it reached its final status; null while processing.
    pub settled_at: Option<DateTime<Utc>>,
    /// When it was requested.
    pub created_at: DateTime<Utc>,
}

/// An order as shown.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrderView {
    /// The order's id.
    pub id: Id,
    /// The order's number, unique per tenant; also its number at the pay platform.
    pub order_no: String,
    /// The tenant selling.
    pub tenant_id: Id,
    /// The tenant's partner.
    pub partner_id: Option<Id>,
    /// What the order is for, shown to the payer.
    pub subject: String,
    /// Fen.
    pub amount: Money,
    /// Fen: the amount once paid.
    pub paid_amount: Money,
    /// Fen: the sum of the succeeded refunds.
    pub refunded_amount: Money,
    /// Where the order is in its lifecycle.
    pub status: OrderStatus,
    /// Its lines, in the order given.
    pub items: Vec<OrderItemView>,
    /// The payer's openid in the tenant's mini-program, when known.
    pub openid: Option<String>,
    /// Null until a payment is started.
    pub payment: Option<PaymentView>,
    /// What the pay platform reported that does not match the order (another amount or
    /// currency); such an order is not paid until a person resolves it. Null normally.
    pub discrepancy: Option<String>,
    /// The ledger's refunds of it, oldest first, as the order last synced them: at once for a
    /// refund asked for through the order, within moments for one made through the payment
    /// routes or settled by the platform.
    pub refunds: Vec<RefundView>,
    /// A sub-merchant's payment: how it is settled — each receiver's share (the platform's,
    /// the partner's commission) as it stands; the tenant keeps the rest. Empty for a direct
    /// or offline payment and before the payment is shared.
    pub shares: Vec<ShareView>,
    /// When an unpaid order is closed.
    pub expires_at: DateTime<Utc>,
    /// The user who created it.
    pub created_by: Option<Id>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<OrderItem> for OrderItemView {
    fn from(i: OrderItem) -> Self {
        OrderItemView { name: i.name, quantity: i.quantity, unit_price: i.unit_price }
    }
}

impl From<Payment> for PaymentView {
    fn from(p: Payment) -> Self {
        PaymentView {
            method: p.method,
            out_trade_no: p.out_trade_no,
            transaction_id: p.transaction_id,
            paid_at: p.paid_at,
            reference: p.reference,
            paid_by: p.paid_by,
        }
    }
}

impl From<OrderRefund> for RefundView {
    fn from(r: OrderRefund) -> Self {
        RefundView {
            id: r.id,
            out_refund_no: r.out_refund_no,
            amount: r.amount,
            status: r.status,
            reason: r.reason,
            requested_by: r.requested_by,
            fail_reason: r.fail_reason,
            settled_at: r.settled_at,
            created_at: r.created_at,
        }
    }
}

impl OrderView {
    /// The order as shown, with its refunds (oldest first) and no shares.
    pub fn new(o: Order) -> Self {
        OrderView {
            id: o.id,
            order_no: o.order_no,
            tenant_id: o.tenant_id,
            partner_id: o.partner_id,
            subject: o.subject,
            amount: o.amount,
            paid_amount: o.paid_amount,
            refunded_amount: o.refunded_amount,
            status: o.status,
            items: o.items.into_iter().map(Into::into).collect(),
            openid: o.openid,
            payment: o.payment.map(Into::into),
            discrepancy: o.discrepancy,
            refunds: o.refunds.into_iter().map(Into::into).collect(),
            shares: Vec::new(),
            expires_at: o.expires_at,
            created_by: o.created_by,
            created_at: o.created_at,
            updated_at: o.updated_at,
        }
    }

    /// This view with the shares of the order's payment.
    pub fn with_shares(self, shares: Vec<ShareView>) -> Self {
        OrderView { shares, ..self }
    }
}

/// The answer to a pay request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrderPayView {
    /// The order after the request.
    pub order: OrderView,
    /// For `wechat_jsapi`: what the mini-program passes to `wx.requestPayment`; null for an
    /// offline payment.
    pub pay_params: Option<PayParams>,
}

/// The answer to a refund request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct OrderRefundView {
    /// The order after the request.
    pub order: OrderView,
    /// The refund asked for (`processing` until the pay platform settles it).
    pub refund: RefundView,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pay_body_is_read_by_its_method() {
        let jsapi: PayOrder = serde_json::from_value(json!({"method": "wechat_jsapi", "openid": "o-1"})).unwrap();
        let bare: PayOrder = serde_json::from_value(json!({"method": "wechat_jsapi"})).unwrap();
        let offline: PayOrder = serde_json::from_value(json!({"method": "offline", "reference": "TX 2026-0042"})).unwrap();

        assert_eq!(jsapi, PayOrder::WechatJsapi { openid: Some(Openid::parse("o-1").unwrap()) });
        assert_eq!(bare, PayOrder::WechatJsapi { openid: None });
        assert!(matches!(offline, PayOrder::Offline { ref reference } if reference.as_str() == "TX 2026-0042"));
    }

    #[test]
    fn a_pay_body_with_an_unknown_method_or_field_or_no_reference_is_refused() {
        for bad in [
            json!({"method": "cash"}),
            json!({"method": "offline"}),
            json!({"method": "offline", "reference": "R1", "amount": 5}),
            json!({"method": "wechat_jsapi", "openid": "o-1", "extra": true}),
            json!({"openid": "o-1"}),
        ] {
            assert!(serde_json::from_value::<PayOrder>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_create_body_is_parsed_into_checked_types() {
        let body = json!({"subject": "Coffee", "items": [{"name": "Beans", "quantity": 2, "unit_price": 4400}], "expires_in": 600});
        let order: NewOrder = serde_json::from_value(body).unwrap();
        assert_eq!(order.items.as_ref().map(Vec::len), Some(1));
        assert_eq!(order.amount, None);
        for bad in [
            json!({"subject": "", "amount": 1}),
            json!({"subject": "Coffee", "amount": -1}),
            json!({"subject": "Coffee", "amount": 1, "status": "paid"}),
            json!({"subject": "Coffee", "items": [{"name": "Beans", "quantity": 1, "unit_price": 1_000_000_000_001_i64}]}),
        ] {
            assert!(serde_json::from_value::<NewOrder>(bad.clone()).is_err(), "{bad}");
        }
    }

    #[test]
    fn list_parameters_check_the_sort_and_the_time_range() {
        let from = DateTime::from_timestamp(1_800_000_000, 0).unwrap();
        let ok = OrderQuery::try_from(OrderListParams { sort: Some("-amount".into()), created_from: Some(from), ..Default::default() });
        assert!(matches!(ok, Ok(ref q) if q.list.sort == Some((OrderSort::Amount, atrium_kernel::SortOrder::Desc))));
        let backwards =
            OrderListParams { created_from: Some(from), created_to: Some(from - chrono::Duration::seconds(1)), ..Default::default() };
        assert!(matches!(OrderQuery::try_from(backwards), Err(Error::Invalid(ref e)) if e[0].field == "created_to"));
        let bad_sort = OrderListParams { sort: Some("subject".into()), ..Default::default() };
        assert!(matches!(OrderQuery::try_from(bad_sort), Err(Error::Invalid(ref e)) if e[0].field == "sort"));
    }

    #[cfg(feature = "openapi")]
    #[test]
    fn the_schemas_publish_the_bounds_the_parsers_and_the_service_check() {
        use utoipa::PartialSchema;
        let new_order = serde_json::to_value(NewOrder::schema()).unwrap();
        let p = &new_order["properties"];
        assert_eq!((p["amount"]["minimum"].clone(), p["amount"]["maximum"].clone()), (json!(1), json!(1_000_000_000_000_i64)));
        assert_eq!((p["expires_in"]["minimum"].clone(), p["expires_in"]["maximum"].clone()), (json!(60), json!(604_800)));
        assert_eq!((p["items"]["minItems"].clone(), p["items"]["maxItems"].clone()), (json!(1), json!(100)));
        assert_eq!(new_order["additionalProperties"], json!(false));
        let item = serde_json::to_value(ItemInput::schema()).unwrap();
        assert_eq!(
            (item["properties"]["quantity"]["minimum"].clone(), item["properties"]["quantity"]["maximum"].clone()),
            (json!(1), json!(1_000_000))
        );
        assert_eq!(item["properties"]["unit_price"]["minimum"], json!(0));
        let refund = serde_json::to_value(NewRefund::schema()).unwrap();
        assert_eq!(refund["properties"]["amount"]["minimum"], json!(1));
        let subject = serde_json::to_value(Subject::schema()).unwrap();
        assert_eq!((subject["minLength"].clone(), subject["maxLength"].clone()), (json!(1), json!(127)));

        let pay = serde_json::to_value(PayOrder::schema()).unwrap();
        let variants = pay["oneOf"].as_array().unwrap();
        assert_eq!(variants.len(), 2);
        for v in variants {
            assert_eq!(v["additionalProperties"], json!(false), "{v}");
        }
        assert_eq!(variants[1]["required"], json!(["method", "reference"]));
        assert_eq!(variants[1]["properties"]["reference"]["maxLength"], json!(64));
        assert_eq!(variants[0]["properties"]["openid"]["oneOf"][0]["pattern"], json!("^[0-9A-Za-z_\\-]{1,128}$"));
    }
}
