//! Tables to bytes: xlsx with rust_xlsxwriter, csv with the csv crate (GBK through
//! encoding_rs). Synchronous; the caller runs it off the async threads.
use atrium_payroll::files::{Cell, ColumnKind, OutputFormat, Table, TextEncoding, WriteError};
use rust_xlsxwriter::{Format, FormatAlign, Workbook, Worksheet, XlsxError};

/// Money as a number only below this many fen (10,000,000,000,000.00 yuan): a spreadsheet keeps
/// 15 significant digits, so a larger figure is written as text rather than rounded.
const EXACT_MONEY_FEN: i64 = 1_000_000_000_000_000;
/// Whole numbers as numbers only below 2⁵³ (what a double holds exactly).
const EXACT_COUNT: i64 = 1 << 53;

pub fn write(table: &Table, format: OutputFormat) -> Result<Vec<u8>, WriteError> {
    match format {
        OutputFormat::Xlsx => xlsx(table).map_err(|e| WriteError::Failed(format!("xlsx: {e}"))),
        OutputFormat::Csv { encoding, bom } => csv(table, encoding, bom),
    }
}

fn xlsx(table: &Table) -> Result<Vec<u8>, XlsxError> {
    let mut workbook = Workbook::new();
    let header = Format::new().set_bold().set_align(FormatAlign::Center);
    let money = Format::new().set_num_format("0.00");
    let text = Format::new().set_num_format("@");
    let total = Format::new().set_bold();
    let total_money = Format::new().set_bold().set_num_format("0.00");
    let sheet = workbook.add_worksheet();
    sheet.set_name(table.sheet_name.as_str())?;
    for (c, column) in table.columns.iter().enumerate() {
        let c = col(c)?;
        sheet.write_string_with_format(0, c, column.name.as_str(), &header)?;
        // Wide enough for the header and a six-figure amount.
        let width = column.name.chars().count().max(12) as f64 + 2.0;
        sheet.set_column_width(c, width)?;
        match column.kind {
            ColumnKind::Money => sheet.set_column_format(c, &money)?,
            ColumnKind::Text => sheet.set_column_format(c, &text)?,
            ColumnKind::Count => sheet,
        };
    }
    sheet.set_freeze_panes(1, 0)?;
    for (r, row) in table.rows.iter().enumerate() {
        let r = row_number(r + 1)?;
        for (c, cell) in row.iter().enumerate() {
            write_cell(sheet, r, col(c)?, cell, &money, &text)?;
        }
    }
    if let Some(totals) = &table.totals {
        let r = row_number(table.rows.len() + 1)?;
        for (c, cell) in totals.iter().enumerate() {
            write_cell(sheet, r, col(c)?, cell, &total_money, &total)?;
        }
    }
    workbook.save_to_buffer()
}

fn col(c: usize) -> Result<u16, XlsxError> {
    u16::try_from(c).map_err(|_| XlsxError::RowColumnLimitError)
}

fn row_number(r: usize) -> Result<u32, XlsxError> {
    u32::try_from(r).map_err(|_| XlsxError::RowColumnLimitError)
}

fn write_cell(sheet: &mut Worksheet, r: u32, c: u16, cell: &Cell, money: &Format, text: &Format) -> Result<(), XlsxError> {
    match cell {
        Cell::Empty => {}
        // A string cell: never a formula, whatever it starts with.
        Cell::Text(t) => {
            sheet.write_string_with_format(r, c, t.as_str(), text)?;
        }
        // fen / 100 is the double nearest the two-decimal amount, which Excel and every reader
        // show (and print back) as exactly that amount.
        Cell::Money(m) if m.fen().unsigned_abs() < EXACT_MONEY_FEN as u64 => {
            sheet.write_number_with_format(r, c, m.fen() as f64 / 100.0, money)?;
        }
        Cell::Money(m) => {
            sheet.write_string_with_format(r, c, m.to_string(), text)?;
        }
        Cell::Count(n) if n.unsigned_abs() < EXACT_COUNT as u64 => {
            sheet.write_number(r, c, *n as f64)?;
        }
        Cell::Count(n) => {
            sheet.write_string(r, c, n.to_string())?;
        }
    }
    Ok(())
}

/// Characters a spreadsheet may take for a formula's start, at the start of a cell.
const FORMULA_START: [char; 6] = ['=', '+', '-', '@', '\t', '\r'];
/// Characters a spreadsheet may split cells at when it opens a csv file: the comma of this
/// file, and the semicolon, tab and bar that other locales and import settings use, and a line
/// break.
const SEPARATORS: [char; 6] = [',', ';', '\t', '|', '\r', '\n'];

/// A csv cell's text, quoted when it must be. Wherever a cell could start — at the start of the
/// text, or after a separator that a spreadsheet may split at (`,` `;` tab `|`, a line break),
/// spaces skipped — a formula's first character (`=`, `+`, `-`, `@`, a tab or a carriage
/// return) gets a `'` before it, so opening the file runs nothing however it is split; such a
/// text, and one holding a separator or a quote, is quoted.
fn csv_text(cell: &Cell) -> String {
    match cell {
        Cell::Empty => String::new(),
        Cell::Text(t) => {
            let mut out = String::with_capacity(t.len() + 4);
            let mut cell_start = true;
            let mut defused = false;
            for c in t.chars() {
                if cell_start && FORMULA_START.contains(&c) {
                    out.push('\'');
                    defused = true;
                }
                out.push(c);
                cell_start = SEPARATORS.contains(&c) || (cell_start && c == ' ');
            }
            if defused || out.contains(SEPARATORS) || out.contains('"') { format!("\"{}\"", out.replace('"', "\"\"")) } else { out }
        }
        Cell::Money(m) => m.to_string(),
        Cell::Count(n) => n.to_string(),
    }
}

fn csv(table: &Table, encoding: TextEncoding, bom: bool) -> Result<Vec<u8>, WriteError> {
    let header: Vec<String> = table.columns.iter().map(|c| csv_text(&Cell::Text(c.name.clone()))).collect();
    let lines = std::iter::once((None, header))
        .chain(table.rows.iter().enumerate().map(|(r, row)| (Some(r), row.iter().map(csv_text).collect())))
        .chain(table.totals.iter().map(|t| (None, t.iter().map(csv_text).collect())));
    let mut out = Vec::with_capacity(64 * (table.rows.len() + 2));
    if bom && encoding == TextEncoding::Utf8 {
        out.extend_from_slice("\u{feff}".as_bytes());
    }
    // Each cell comes quoted as it must be (`csv_text`): the writer only joins them.
    let mut writer = csv::WriterBuilder::new().terminator(csv::Terminator::CRLF).quote_style(csv::QuoteStyle::Never).from_writer(out);
    for (row, cells) in lines {
        if encoding == TextEncoding::Gbk {
            for (column, text) in cells.iter().enumerate() {
                let (_, _, unmappable) = encoding_rs::GBK.encode(text);
                if unmappable {
                    return Err(WriteError::Unencodable { row, column });
                }
            }
        }
        writer.write_record(&cells).map_err(|e| WriteError::Failed(format!("csv: {e}")))?;
    }
    let utf8 = writer.into_inner().map_err(|e| WriteError::Failed(format!("csv: {e}")))?;
    match encoding {
        TextEncoding::Utf8 => Ok(utf8),
        TextEncoding::Gbk => {
            let text = String::from_utf8(utf8).map_err(|e| WriteError::Failed(format!("csv: {e}")))?;
            let (bytes, _, unmappable) = encoding_rs::GBK.encode(&text);
            if unmappable {
                return Err(WriteError::Failed("csv: a character GBK cannot write slipped past the cell check".to_owned()));
            }
            Ok(bytes.into_owned())
        }
    }
}
