//! Writes a payroll import file for benches and trials: `ROWS` rows for the employee numbers
//! the seed gives (`E000001`, …), bonuses and allowances in yuan.
//! `cargo run --release -p atrium-tabular --example import_file -- 10000 xlsx out.xlsx`
use atrium_kernel::Money;
use atrium_payroll::files::{Cell, Column, ColumnKind, OutputFormat, Table, TextEncoding};

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let [_, rows, format, out] = args.as_slice() else {
        return Err("usage: import_file ROWS xlsx|csv OUT".into());
    };
    let rows: usize = rows.parse().map_err(|_| format!("ROWS must be a number, not {rows}"))?;
    let format = match format.as_str() {
        "xlsx" => OutputFormat::Xlsx,
        "csv" => OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: false },
        other => return Err(format!("the format is xlsx or csv, not {other}")),
    };
    let table = Table {
        sheet_name: "Payroll import".into(),
        columns: vec![
            Column::new("employee_no", ColumnKind::Text),
            Column::new("allowance", ColumnKind::Money),
            Column::new("bonus", ColumnKind::Money),
        ],
        rows: (0..rows)
            .map(|i| {
                vec![
                    Cell::Text(format!("E{:06}", i + 1)),
                    Cell::Money(Money::from_fen((i % 20) as i64 * 5_000)),
                    Cell::Money(Money::from_fen((i % 100) as i64 * 1_050 + 1)),
                ]
            })
            .collect(),
        totals: None,
    };
    let bytes = atrium_tabular::encode(&table, format).map_err(|e| format!("{e:?}"))?;
    std::fs::write(out, bytes).map_err(|e| e.to_string())
}
