//! The adapter alone on a 10,000-line sheet: encoding the export (26 columns) as xlsx and csv,
//! the bank file (5 columns) as GBK csv, and decoding a 10,000-row import as xlsx and csv.
//! `cargo bench -p atrium-tabular`; bench/payroll.sh measures the same over HTTP.
use atrium_kernel::Money;
use atrium_payroll::files::{
    BANK_COLUMNS, Cell, Column, ColumnKind, EXPORT_COLUMNS, IMPORT_COLUMNS, OutputFormat, ReadLimits, Table, TextEncoding,
};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use std::hint::black_box;

const LINES: usize = 10_000;

fn money(i: usize, c: usize) -> Cell {
    Cell::Money(Money::from_fen(((i * 7919 + c * 104_729) % 5_000_000) as i64))
}

/// An export of `LINES` items, every column filled.
fn export() -> Table {
    let rows = (0..LINES)
        .map(|i| {
            EXPORT_COLUMNS
                .iter()
                .enumerate()
                .map(|(c, (name, kind))| match kind {
                    ColumnKind::Money => money(i, c),
                    ColumnKind::Count => Cell::Count(i as i64 + 1),
                    ColumnKind::Text if *name == "employee_name" => Cell::Text(format!("员工{i}")),
                    ColumnKind::Text => Cell::Text(format!("E{:06}", i + 1)),
                })
                .collect()
        })
        .collect();
    Table {
        sheet_name: "Payroll 2026-03".into(),
        columns: EXPORT_COLUMNS.iter().map(|&(n, k)| Column::new(n, k)).collect(),
        rows,
        totals: None,
    }
}

/// A bank file of `LINES` transfers.
fn bank() -> Table {
    let rows = (0..LINES)
        .map(|i| {
            vec![
                Cell::Text(format!("员工{i}")),
                Cell::Text(format!("62220202{:011}", i)),
                Cell::Text("中国工商银行北京海淀支行".into()),
                money(i, 0),
                Cell::Text("2026-03工资".into()),
            ]
        })
        .collect();
    Table {
        sheet_name: "Bank transfer".into(),
        columns: BANK_COLUMNS.iter().map(|&(n, k)| Column::new(n, k)).collect(),
        rows,
        totals: None,
    }
}

/// An import of `LINES` rows (what `examples/import_file.rs` writes).
fn import() -> Table {
    let columns: Vec<Column> = IMPORT_COLUMNS
        .iter()
        .map(|&n| Column::new(n, if n.starts_with("employee_") { ColumnKind::Text } else { ColumnKind::Money }))
        .collect();
    let rows = (0..LINES)
        .map(|i| {
            (0..columns.len())
                .map(|c| match c {
                    0 => Cell::Text(format!("E{:06}", i + 1)),
                    1 => Cell::Empty,
                    _ => money(i, c),
                })
                .collect()
        })
        .collect();
    Table { sheet_name: "Payroll import".into(), columns, rows, totals: None }
}

fn files(c: &mut Criterion) {
    let mut group = c.benchmark_group("10000 lines");
    group.throughput(Throughput::Elements(LINES as u64));
    group.sample_size(10);
    let export = export();
    let bank = bank();
    let utf8 = OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: true };
    let gbk = OutputFormat::Csv { encoding: TextEncoding::Gbk, bom: false };
    group.bench_function("export xlsx", |b| b.iter(|| atrium_tabular::encode(black_box(&export), OutputFormat::Xlsx)));
    group.bench_function("export csv", |b| b.iter(|| atrium_tabular::encode(black_box(&export), utf8)));
    group.bench_function("bank file gbk", |b| b.iter(|| atrium_tabular::encode(black_box(&bank), gbk)));
    let limits = ReadLimits { max_rows: LINES + 1, max_columns: 64 };
    let xlsx = atrium_tabular::encode(&import(), OutputFormat::Xlsx).unwrap_or_default();
    let csv = atrium_tabular::encode(&import(), utf8).unwrap_or_default();
    group.bench_function("import xlsx", |b| b.iter(|| atrium_tabular::decode(black_box(&xlsx), limits)));
    group.bench_function("import csv", |b| b.iter(|| atrium_tabular::decode(black_box(&csv), limits)));
    group.finish();
    for (name, bytes) in [
        ("export xlsx", atrium_tabular::encode(&export, OutputFormat::Xlsx).map(|b| b.len())),
        ("export csv", atrium_tabular::encode(&export, utf8).map(|b| b.len())),
        ("bank file gbk", atrium_tabular::encode(&bank, gbk).map(|b| b.len())),
    ] {
        println!("{name}: {} KiB", bytes.unwrap_or_default() / 1024);
    }
    println!("import xlsx: {} KiB, import csv: {} KiB", xlsx.len() / 1024, csv.len() / 1024);
}

criterion_group!(benches, files);
criterion_main!(benches);
