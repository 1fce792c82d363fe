ALTER TABLE orders DROP COLUMN pay_sub_merchant;
