-- Whether an order's payment was placed for a sub-merchant (the platform's service provider
-- collecting for the tenant), so its money is shared: only then does reading the order ask
-- the ledger for shares. Set when the order learns it is paid; the backfill takes it from the
-- order's paid platform payment.
ALTER TABLE orders ADD COLUMN pay_sub_merchant BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE orders SET pay_sub_merchant = TRUE
WHERE EXISTS (
    SELECT 1 FROM payment_transactions t
    WHERE t.tenant_id = orders.tenant_id AND t.order_id = orders.id AND t.sub_mchid IS NOT NULL
      AND t.method = 'wechat_jsapi' AND t.trade_state IN ('SUCCESS', 'REFUND')
);
