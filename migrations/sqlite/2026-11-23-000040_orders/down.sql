DROP TABLE order_refunds;
DROP TABLE order_items;
DROP TABLE orders;
