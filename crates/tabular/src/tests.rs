//! The adapter against the real format libraries: what it writes reads back as written (xlsx
//! through calamine, csv in UTF-8 and GBK), amounts exactly; what it refuses to read, and why.
#![allow(clippy::unwrap_used)]
use super::*;
use atrium_kernel::Money;
use atrium_payroll::files::{Cell, Column, ColumnKind, FileFormat, ReadCell, TextEncoding};
use std::io::Write;

const LIMITS: ReadLimits = ReadLimits { max_rows: 100, max_columns: 64 };

fn table(rows: Vec<Vec<Cell>>) -> Table {
    Table {
        sheet_name: "Payroll 2026-03".to_owned(),
        columns: vec![
            Column::new("employee_no", ColumnKind::Text),
            Column::new("employee_name", ColumnKind::Text),
            Column::new("net_pay", ColumnKind::Money),
            Column::new("months_employed", ColumnKind::Count),
        ],
        rows,
        totals: None,
    }
}

fn text(s: &str) -> ReadCell {
    ReadCell::Text(s.to_owned())
}

/// Amounts a float gets wrong when handled carelessly, and the edges of what a number holds.
const AMOUNTS: [i64; 9] = [0, 1, 29, 115, 435, 123_456, -1_205, 999_999_999_999_999, 1_000_000_000_000_000];

fn amounts_table() -> Table {
    let rows = AMOUNTS
        .iter()
        .enumerate()
        .map(|(i, &fen)| {
            vec![Cell::Text(format!("00{i}")), Cell::Text("张三丰".to_owned()), Cell::Money(Money::from_fen(fen)), Cell::Count(i as i64)]
        })
        .collect();
    Table { totals: Some(vec![Cell::Text("total".into()), Cell::Empty, Cell::Money(Money::from_fen(42)), Cell::Empty]), ..table(rows) }
}

/// An amount as a reader sees it: csv holds the text written (`1234.50`); xlsx holds a number,
/// read as the shortest decimal of it (`1234.5`), except past 15 digits, written as text.
fn as_read(fen: i64, format: FileFormat) -> String {
    let written = Money::from_fen(fen).to_string();
    if format == FileFormat::Csv || fen.unsigned_abs() >= 1_000_000_000_000_000 {
        return written;
    }
    written.trim_end_matches('0').trim_end_matches('.').to_owned()
}

fn expect_amounts(sheet: &ReadSheet) {
    assert_eq!(sheet.rows[0].cells, [text("employee_no"), text("employee_name"), text("net_pay"), text("months_employed")]);
    for (i, &fen) in AMOUNTS.iter().enumerate() {
        let row = &sheet.rows[i + 1];
        assert_eq!(row.number, i as u32 + 2);
        assert_eq!(row.cells[0], text(&format!("00{i}")), "text stays text");
        assert_eq!(row.cells[1], text("张三丰"));
        assert_eq!(row.cells[2], text(&as_read(fen, sheet.format)), "{fen} fen");
        if (0..=Money::MAX_INPUT.fen()).contains(&fen) {
            // What the import reads it as: the same fen.
            let ReadCell::Text(t) = &row.cells[2] else { panic!() };
            assert_eq!(atrium_payroll::files::parse_yuan(t), Ok(Money::from_fen(fen)));
        }
        assert_eq!(row.cells[3], text(&i.to_string()));
    }
    let totals = sheet.rows.last().unwrap();
    assert_eq!((totals.number, &totals.cells[0], &totals.cells[2]), (AMOUNTS.len() as u32 + 2, &text("total"), &text("0.42")));
    assert_eq!(as_read(0, FileFormat::Xlsx), "0");
}

#[test]
fn xlsx_reads_back_as_written_with_amounts_exact() {
    let bytes = write::write(&amounts_table(), OutputFormat::Xlsx).unwrap();
    assert!(bytes.starts_with(b"PK\x03\x04"));
    let sheet = read::read(&bytes, LIMITS).unwrap();
    assert_eq!(sheet.format, FileFormat::Xlsx);
    expect_amounts(&sheet);
}

#[test]
fn csv_reads_back_as_written_in_utf8_with_and_without_a_byte_order_mark_and_in_gbk() {
    for (encoding, bom) in [(TextEncoding::Utf8, true), (TextEncoding::Utf8, false), (TextEncoding::Gbk, false)] {
        let bytes = write::write(&amounts_table(), OutputFormat::Csv { encoding, bom }).unwrap();
        assert_eq!(bytes.starts_with(b"\xEF\xBB\xBF"), bom, "{encoding:?}");
        let sheet = read::read(&bytes, LIMITS).unwrap();
        assert_eq!(sheet.format, FileFormat::Csv);
        expect_amounts(&sheet);
        assert!(bytes.windows(2).any(|w| w == b"\r\n"), "CRLF line ends");
    }
}

#[test]
fn gbk_round_trips_chinese_names() {
    let names = ["张三", "欧阳娜娜", "李小龙", "王𬌗"]; // the last has a character GBK lacks
    let rows = names[..3].iter().map(|n| vec![Cell::Text("E1".into()), Cell::Text((*n).into()), Cell::Empty, Cell::Empty]).collect();
    let bytes = write::write(&table(rows), OutputFormat::Csv { encoding: TextEncoding::Gbk, bom: false }).unwrap();
    assert!(std::str::from_utf8(&bytes).is_err(), "GBK bytes are not UTF-8");
    // 张三 in GBK is D5 C5 C8 FD.
    assert!(bytes.windows(4).any(|w| w == [0xD5, 0xC5, 0xC8, 0xFD]), "{bytes:x?}");
    let (decoded, _, errors) = encoding_rs::GBK.decode(&bytes);
    assert!(!errors);
    for n in &names[..3] {
        assert!(decoded.contains(n), "{decoded}");
    }
    let sheet = read::read(&bytes, LIMITS).unwrap();
    let read_names: Vec<&ReadCell> = sheet.rows[1..].iter().map(|r| &r.cells[1]).collect();
    assert_eq!(read_names, [&text("张三"), &text("欧阳娜娜"), &text("李小龙")]);

    // A name GBK cannot write is reported by its row and column, not replaced.
    let rows = names.iter().map(|n| vec![Cell::Text("E1".into()), Cell::Text((*n).into()), Cell::Empty, Cell::Empty]).collect();
    let err = write::write(&table(rows), OutputFormat::Csv { encoding: TextEncoding::Gbk, bom: false }).unwrap_err();
    assert_eq!(err, WriteError::Unencodable { row: Some(3), column: 1 });
    // UTF-8 writes it.
    let rows = names.iter().map(|n| vec![Cell::Text("E1".into()), Cell::Text((*n).into()), Cell::Empty, Cell::Empty]).collect();
    assert!(write::write(&table(rows), OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: false }).is_ok());
}

#[test]
fn csv_text_that_a_spreadsheet_would_run_is_defused() {
    let rows = vec![vec![Cell::Text("=HYPERLINK(\"x\")".into()), Cell::Text("-1+2".into()), Cell::Money(Money::from_fen(-5)), Cell::Empty]];
    let bytes = write::write(&table(rows), OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: false }).unwrap();
    let text = String::from_utf8(bytes).unwrap();
    assert!(text.contains("'=HYPERLINK(\"\"x\"\")") && text.contains("'-1+2"), "{text}");
    assert!(text.contains(",-0.05,"), "an amount is not text: {text}");
}

#[test]
fn a_formula_after_any_separator_a_spreadsheet_may_split_at_is_defused_and_quoted() {
    let names = ["Li;=cmd|' /C calc'!A0;", "Wang\t+1", "Zhao, @SUM(A1)", "Qian| -2", "Sun\n=1", "Jean-Luc; Li", "Plain"];
    let rows: Vec<Vec<Cell>> =
        names.iter().map(|n| vec![Cell::Text("E1".into()), Cell::Text((*n).into()), Cell::Empty, Cell::Empty]).collect();
    for encoding in [TextEncoding::Utf8, TextEncoding::Gbk] {
        let bytes = write::write(&table(rows.clone()), OutputFormat::Csv { encoding, bom: false }).unwrap();
        let text = match encoding {
            TextEncoding::Utf8 => String::from_utf8(bytes).unwrap(),
            TextEncoding::Gbk => encoding_rs::GBK.decode(&bytes).0.into_owned(),
        };
        // Split the way a spreadsheet of another locale might: no cell starts a formula.
        for separator in [',', ';', '\t', '|', '\n'] {
            for cell in text.split(separator) {
                let cell = cell.trim_start_matches(['"', ' ', '\r']);
                assert!(!cell.starts_with(['=', '+', '-', '@']), "split at {separator:?}, a cell starts a formula: {cell:?} in {text}");
            }
        }
        assert!(text.contains(r#""Li;'=cmd|' /C calc'!A0;""#), "{text}");
        assert!(text.contains("\"Jean-Luc; Li\""), "a separator is quoted, a hyphen inside a word left alone: {text}");
        assert!(text.contains(",Plain,"), "plain text stays unquoted: {text}");
        // The file reads back as the cells written, the marks aside.
        let read: Vec<Vec<String>> = csv::ReaderBuilder::new()
            .from_reader(text.as_bytes())
            .records()
            .map(|r| r.unwrap().iter().map(str::to_owned).collect())
            .collect();
        assert_eq!(read[0][1], "Li;'=cmd|' /C calc'!A0;");
        assert_eq!(read[4][1], "Sun\n'=1");
        assert_eq!(read[6][1], "Plain");
    }
}

#[test]
fn an_xlsx_number_is_read_as_the_decimal_it_holds_and_a_date_is_not_a_number() {
    let mut workbook = rust_xlsxwriter::Workbook::new();
    let sheet = workbook.add_worksheet();
    sheet.write_string(0, 0, "employee_no").unwrap();
    sheet.write_string(0, 1, "bonus").unwrap();
    sheet.write_number(1, 0, 1001).unwrap();
    sheet.write_number(1, 1, 0.1 + 0.2).unwrap();
    sheet.write_number(2, 0, 1002).unwrap();
    let date = rust_xlsxwriter::ExcelDateTime::from_ymd(2026, 1, 5).unwrap();
    sheet.write_datetime_with_format(2, 1, &date, &rust_xlsxwriter::Format::new().set_num_format("yyyy-mm-dd")).unwrap();
    sheet.write_boolean(3, 0, true).unwrap();
    // Row 5 is blank, row 6 follows it.
    sheet.write_string(5, 0, "1003").unwrap();
    sheet.write_string(5, 1, "1,234.50").unwrap();
    let bytes = workbook.save_to_buffer().unwrap();
    let read = read::read(&bytes, LIMITS).unwrap();
    let rows: Vec<(u32, Vec<ReadCell>)> = read.rows.into_iter().map(|r| (r.number, r.cells)).collect();
    assert_eq!(rows[1], (2, vec![text("1001"), text("0.30000000000000004")]));
    assert_eq!(rows[2], (3, vec![text("1002"), ReadCell::Other("a date or time".into())]));
    assert_eq!(rows[3], (4, vec![ReadCell::Other("the logical value TRUE".into())]));
    assert_eq!(rows[4], (6, vec![text("1003"), text("1,234.50")]));
}

#[test]
fn csv_rows_are_numbered_as_a_spreadsheet_shows_them() {
    let csv = "employee_no,bonus\r\nE1,1\r\n\r\n,\r\nE2,\"multi\nline\"\r\nE3,3\r\n";
    let sheet = read::read(csv.as_bytes(), LIMITS).unwrap();
    let numbers: Vec<u32> = sheet.rows.iter().map(|r| r.number).collect();
    assert_eq!(numbers, [1, 2, 5, 6]);
    assert_eq!(sheet.rows[2].cells, [text("E2"), text("multi\nline")]);
}

#[test]
fn a_gbk_csv_as_chinese_excel_saves_it_is_read() {
    let (bytes, _, _) = encoding_rs::GBK.encode("employee_no,employee_name,bonus\r\nE1,张三,100\r\n");
    let sheet = read::read(&bytes, LIMITS).unwrap();
    assert_eq!(sheet.rows[1].cells, [text("E1"), text("张三"), text("100")]);
}

#[test]
fn what_is_not_xlsx_or_csv_is_refused_by_its_content() {
    assert_eq!(read::read(b"", LIMITS), Err(ReadError::Empty));
    assert_eq!(read::read(b" \r\n\t", LIMITS), Err(ReadError::Empty));
    assert_eq!(read::read(b"\xEF\xBB\xBF", LIMITS), Err(ReadError::Empty));
    assert_eq!(read::read(b",,\r\n,\r\n", LIMITS), Err(ReadError::Empty));
    let refused = |bytes: &[u8]| match read::read(bytes, LIMITS) {
        Err(ReadError::NotSpreadsheet(what)) => what,
        other => panic!("expected NotSpreadsheet, got {other:?}"),
    };
    assert!(refused(b"%PDF-1.7\n").contains("PDF"));
    assert!(refused(b"\x89PNG\r\n\x1a\n\0\0").contains("PNG"));
    assert!(refused(b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1\0\0").contains(".xls"));
    assert!(refused(b"\xFF\xFEe\0m\0").contains("UTF-16"));
    assert!(refused(b"abc\0def").contains("binary"));
    assert!(refused(b"\x81\x20\xFF\xFE\x80").contains("neither UTF-8 nor GBK"));
    // A zip that is not a workbook (a mini-program package, a .docx).
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    zip.start_file("app.json", zip::write::SimpleFileOptions::default()).unwrap();
    zip.write_all(b"{}").unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    assert!(refused(&bytes).contains("not an xlsx workbook"));
    assert!(matches!(read::read(b"PK\x03\x04garbage", LIMITS), Err(ReadError::Unreadable(_))));
}

#[test]
fn a_workbook_that_unpacks_to_more_than_the_limit_is_refused_before_unpacking() {
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options = zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Deflated);
    zip.start_file("xl/workbook.xml", options).unwrap();
    zip.write_all(b"<workbook/>").unwrap();
    zip.start_file("xl/sharedStrings.xml", options).unwrap();
    let zeros = vec![b' '; 1024 * 1024];
    for _ in 0..65 {
        zip.write_all(&zeros).unwrap();
    }
    let bytes = zip.finish().unwrap().into_inner();
    assert!(bytes.len() < 1024 * 1024, "the bomb is small: {}", bytes.len());
    match read::read(&bytes, LIMITS) {
        Err(ReadError::TooLarge(why)) => assert!(why.contains("at most 64 MiB"), "{why}"),
        other => panic!("expected TooLarge, got {other:?}"),
    }
}

#[test]
fn reading_stops_at_the_row_and_column_limits() {
    let limits = ReadLimits { max_rows: 3, max_columns: 4 };
    let csv = "a\r\n1\r\n2\r\n3\r\n4\r\n";
    assert_eq!(read::read(csv.as_bytes(), limits), Err(ReadError::TooManyRows));
    assert!(read::read(b"a\r\n1\r\n2\r\n", limits).is_ok());
    assert_eq!(read::read(b"a,b\r\n1,2,3,4,5\r\n", limits), Err(ReadError::TooManyColumns { row: 2 }));
    // Empty trailing cells are not columns.
    assert!(read::read(b"a,b\r\n1,2,,,,,,\r\n", limits).is_ok());

    let mut rows = vec![];
    for i in 0..10 {
        rows.push(vec![Cell::Text(format!("E{i}")), Cell::Empty, Cell::Empty, Cell::Empty]);
    }
    let bytes = write::write(&table(rows), OutputFormat::Xlsx).unwrap();
    assert_eq!(read::read(&bytes, limits), Err(ReadError::TooManyRows));
    let mut wide = rust_xlsxwriter::Workbook::new();
    wide.add_worksheet().write_string(1, 4, "x").unwrap();
    assert_eq!(read::read(&wide.save_to_buffer().unwrap(), limits), Err(ReadError::TooManyColumns { row: 2 }));
}

#[tokio::test]
async fn the_ports_run_on_the_blocking_pool() {
    let tabular = Tabular::new(1);
    let bytes = SheetWriter::write(&tabular, amounts_table(), OutputFormat::Xlsx).await.unwrap();
    let sheet = SheetReader::read(&tabular, bytes, LIMITS).await.unwrap();
    expect_amounts(&sheet);
}
