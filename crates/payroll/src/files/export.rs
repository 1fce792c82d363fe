//! A sheet's export: one row per item with every input and computed column (named as the
//! item's fields in the API), and a totals row adding up each money column.
use super::{Cell, Column, ColumnKind, Table};
use crate::model::{Sheet, SheetItem};
use atrium_kernel::Reason;
use atrium_kernel::{Error, Money, StrEnum};

/// The export's columns, in order.
pub const EXPORT_COLUMNS: [(&str, ColumnKind); 26] = [
    ("employee_id", ColumnKind::Count),
    ("employee_no", ColumnKind::Text),
    ("employee_name", ColumnKind::Text),
    ("allowance", ColumnKind::Money),
    ("overtime", ColumnKind::Money),
    ("bonus", ColumnKind::Money),
    ("leave_deduction", ColumnKind::Money),
    ("other_pre_tax_deduction", ColumnKind::Money),
    ("after_tax_deduction", ColumnKind::Money),
    ("annual_bonus", ColumnKind::Money),
    ("gross", ColumnKind::Money),
    ("si_base", ColumnKind::Money),
    ("hf_base", ColumnKind::Money),
    ("pension", ColumnKind::Money),
    ("medical", ColumnKind::Money),
    ("unemployment", ColumnKind::Money),
    ("housing_fund", ColumnKind::Money),
    ("contributions", ColumnKind::Money),
    ("special_deduction", ColumnKind::Money),
    ("months_employed", ColumnKind::Count),
    ("cumulative_taxable", ColumnKind::Money),
    ("cumulative_tax", ColumnKind::Money),
    ("tax", ColumnKind::Money),
    ("annual_bonus_tax", ColumnKind::Money),
    ("net_pay", ColumnKind::Money),
    ("delivery_status", ColumnKind::Text),
];

/// What the totals row says in its first cell.
pub const TOTALS_LABEL: &str = "total";

/// One item's cells, in [`EXPORT_COLUMNS`] order; computed ones are empty until calculated.
fn row(item: &SheetItem) -> Vec<Cell> {
    let a = &item.adjustments;
    let l = item.line.as_ref();
    let computed = |f: fn(&crate::engine::CalculatedLine) -> Money| l.map_or(Cell::Empty, |l| Cell::Money(f(l)));
    vec![
        Cell::Count(item.employee_id),
        item.employee_no.clone().map_or(Cell::Empty, Cell::Text),
        Cell::Text(item.employee_name.clone()),
        Cell::Money(a.allowance),
        Cell::Money(a.overtime),
        Cell::Money(a.bonus),
        Cell::Money(a.leave_deduction),
        Cell::Money(a.other_pre_tax_deduction),
        Cell::Money(a.after_tax_deduction),
        Cell::Money(a.annual_bonus),
        computed(|l| l.gross),
        computed(|l| l.si_base),
        computed(|l| l.hf_base),
        computed(|l| l.pension),
        computed(|l| l.medical),
        computed(|l| l.unemployment),
        computed(|l| l.housing_fund),
        computed(|l| l.contributions),
        computed(|l| l.special_deduction),
        l.map_or(Cell::Empty, |l| Cell::Count(i64::from(l.months_employed))),
        computed(|l| l.cumulative_taxable),
        computed(|l| l.cumulative_tax),
        computed(|l| l.tax),
        computed(|l| l.annual_bonus_tax),
        computed(|l| l.net_pay),
        item.delivery.as_ref().map_or(Cell::Empty, |d| Cell::Text(d.status.as_str().to_owned())),
    ]
}

/// The export of `sheet` with its `items`. A money column's total that would not fit is a 409,
/// as the sheet's own totals are, never a wrong figure.
pub(crate) fn sheet_table(sheet: &Sheet, items: &[SheetItem]) -> Result<Table, Error> {
    let rows: Vec<Vec<Cell>> = items.iter().map(row).collect();
    let mut totals: Vec<Cell> = EXPORT_COLUMNS.iter().map(|_| Cell::Empty).collect();
    totals[0] = Cell::Text(TOTALS_LABEL.to_owned());
    for (c, (name, kind)) in EXPORT_COLUMNS.iter().enumerate() {
        if *kind != ColumnKind::Money {
            continue;
        }
        let mut sum: Option<Money> = None;
        for r in &rows {
            if let Cell::Money(m) = r[c] {
                let next = sum.unwrap_or(Money::ZERO).checked_add(m).map_err(|_| {
                    Error::conflict(Reason::TotalTooLarge, format!("the sheet's total of {name} is too large to write; split the sheet"))
                })?;
                sum = Some(next);
            }
        }
        totals[c] = sum.map_or(Cell::Empty, Cell::Money);
    }
    Ok(Table {
        sheet_name: format!("Payroll {}", sheet.period),
        columns: EXPORT_COLUMNS.iter().map(|&(name, kind)| Column::new(name, kind)).collect(),
        rows,
        totals: Some(totals),
    })
}
