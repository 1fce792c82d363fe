//! The batch-transfer file a bank's corporate portal takes: one line per employee paid — the
//! account's name, its number, the bank, the net pay in yuan and a remark naming the period.
use super::{Cell, Column, ColumnKind, Table};
use crate::engine::SheetKind;
use crate::model::{PayeeAccount, Sheet, SheetItem};
use atrium_kernel::{FieldError, Id, Money};
use std::collections::HashMap;

/// The bank file's header, as Chinese portals name the columns: account name, account
/// number, bank, amount (yuan), remark.
pub const BANK_COLUMNS: [(&str, ColumnKind); 5] = [
    ("户名", ColumnKind::Text),
    ("账号", ColumnKind::Text),
    ("开户行", ColumnKind::Text),
    ("金额", ColumnKind::Money),
    ("备注", ColumnKind::Text),
];

/// The remark on every line: the period and what is paid (`2026-03工资`, salary, for a
/// regular sheet; `2026-03补发`, a supplementary payment, for a supplementary one).
pub fn remark(sheet: &Sheet) -> String {
    match sheet.kind {
        SheetKind::Regular => format!("{}工资", sheet.period),
        SheetKind::Supplementary => format!("{}补发", sheet.period),
    }
}

/// The items a bank file pays, with their index on the sheet: those with something to pay.
/// (An item with a net pay of 0.00 has no transfer; a bank refuses a zero one.)
pub(crate) fn paid(items: &[SheetItem]) -> Vec<(usize, &SheetItem, Money)> {
    items
        .iter()
        .enumerate()
        .filter_map(|(i, item)| item.line.as_ref().filter(|l| l.net_pay > Money::ZERO).map(|l| (i, item, l.net_pay)))
        .collect()
}

/// Which accounts a bank file pays.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum AccountsOf {
    /// Those kept when the sheet was approved.
    Approval,
    /// Those the employee records hold now (a sheet approved before accounts were kept).
    Records,
}

/// The bank file's table, or a 409's errors naming each paid item without a bank account.
pub(crate) fn bank_table(
    sheet: &Sheet,
    items: &[SheetItem],
    accounts: &HashMap<Id, PayeeAccount>,
    of: AccountsOf,
) -> Result<Table, Vec<FieldError>> {
    let remark = remark(sheet);
    let mut rows = Vec::new();
    let mut missing = Vec::new();
    for (i, item, net_pay) in paid(items) {
        match accounts.get(&item.employee_id) {
            Some(account) => rows.push(vec![
                Cell::Text(account.name.clone()),
                Cell::Text(account.account_no.clone()),
                account.bank_name.clone().map_or(Cell::Empty, Cell::Text),
                Cell::Money(net_pay),
                Cell::Text(remark.clone()),
            ]),
            None => missing.push(FieldError::new(
                format!("items[{i}].bank_account"),
                format!(
                    "{}{} {}",
                    item.employee_name,
                    item.employee_no.as_deref().map(|n| format!(" ({n})")).unwrap_or_default(),
                    match of {
                        AccountsOf::Approval => {
                            "had no bank account when the sheet was approved, and the bank file pays only the accounts approved with \
                             it; pay this employee another way, or on a supplementary sheet approved after the account was added"
                        }
                        AccountsOf::Records => "has no bank account on record; add it to the employee, then download the bank file",
                    }
                ),
            )),
        }
    }
    if !missing.is_empty() {
        return Err(missing);
    }
    Ok(Table {
        sheet_name: "Bank transfer".to_owned(),
        columns: BANK_COLUMNS.iter().map(|&(name, kind)| Column::new(name, kind)).collect(),
        rows,
        totals: None,
    })
}
