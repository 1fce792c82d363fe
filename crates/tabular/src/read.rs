//! Bytes to rows: an xlsx workbook's first worksheet with calamine (cell by cell, stopping at
//! the limits), or csv text (UTF-8, or GBK as Chinese Excel saves it) with the csv crate. The
//! content decides which, never a file name. Synchronous; the caller runs it off the async
//! threads.
use atrium_payroll::files::{FileFormat, ReadCell, ReadError, ReadLimits, ReadRow, ReadSheet};
use calamine::{DataRef, Reader, SheetType, Xlsx};
use std::collections::BTreeMap;
use std::io::Cursor;

/// What an xlsx workbook may unpack to, all its parts together: 10,000 rows are about 3 MiB of
/// worksheet XML. The zip's central directory declares each part's size and the zip reader
/// stops a part at its declared size, so this bounds what unpacking can produce (a zip bomb
/// is refused before anything is unpacked).
pub const MAX_UNPACKED_BYTES: u64 = 64 * 1024 * 1024;

const ZIP: &[u8] = b"PK\x03\x04";
const EMPTY_ZIP: &[u8] = b"PK\x05\x06";
const OLE: &[u8] = b"\xD0\xCF\x11\xE0\xA1\xB1\x1A\xE1";
const UTF8_BOM: &[u8] = b"\xEF\xBB\xBF";

pub fn read(bytes: &[u8], limits: ReadLimits) -> Result<ReadSheet, ReadError> {
    if bytes.iter().all(u8::is_ascii_whitespace) || bytes == UTF8_BOM {
        return Err(ReadError::Empty);
    }
    if bytes.starts_with(ZIP) {
        return xlsx(bytes, limits);
    }
    if let Some(what) = known_binary(bytes) {
        return Err(ReadError::NotSpreadsheet(what.to_owned()));
    }
    csv(bytes, limits)
}

/// What a file that is not text is, by its first bytes.
fn known_binary(bytes: &[u8]) -> Option<&'static str> {
    let signatures: [(&[u8], &str); 8] = [
        (OLE, "an Excel 97-2003 .xls workbook or another OLE document, such as a password-protected workbook"),
        (EMPTY_ZIP, "an empty zip archive"),
        (b"%PDF", "a PDF document"),
        (b"\x89PNG", "a PNG image"),
        (b"\xFF\xD8\xFF", "a JPEG image"),
        (b"GIF8", "a GIF image"),
        (b"\xFF\xFE", "UTF-16 text, as Excel's \"Unicode Text\" saves it; save as \"CSV UTF-8\" instead"),
        (b"\xFE\xFF", "UTF-16 text; save as \"CSV UTF-8\" instead"),
    ];
    if let Some((_, what)) = signatures.iter().find(|(magic, _)| bytes.starts_with(magic)) {
        return Some(what);
    }
    // Text has no NUL bytes; nearly every binary format does, early on.
    bytes.iter().take(64 * 1024).any(|&b| b == 0).then_some("binary data")
}

fn too_large(total: u64) -> ReadError {
    ReadError::TooLarge(format!(
        "the workbook unpacks to {} MiB, and an import takes at most {} MiB",
        total.div_ceil(1024 * 1024),
        MAX_UNPACKED_BYTES / (1024 * 1024)
    ))
}

fn xlsx(bytes: &[u8], limits: ReadLimits) -> Result<ReadSheet, ReadError> {
    let mut zip = zip::ZipArchive::new(Cursor::new(bytes)).map_err(|e| ReadError::Unreadable(format!("a damaged zip archive ({e})")))?;
    let mut total: u64 = 0;
    let mut is_workbook = false;
    for i in 0..zip.len() {
        let part = zip.by_index_raw(i).map_err(|e| ReadError::Unreadable(format!("a damaged zip archive ({e})")))?;
        total = total.saturating_add(part.size());
        is_workbook |= part.name().is_ok_and(|n| n == "xl/workbook.xml");
        if total > MAX_UNPACKED_BYTES {
            return Err(too_large(total));
        }
    }
    if !is_workbook {
        return Err(ReadError::NotSpreadsheet("a zip archive that is not an xlsx workbook".to_owned()));
    }
    let unreadable = |e: calamine::XlsxError| ReadError::Unreadable(format!("a damaged xlsx workbook ({e})"));
    let mut workbook: Xlsx<_> = Xlsx::new(Cursor::new(bytes)).map_err(unreadable)?;
    let name = workbook
        .sheets_metadata()
        .iter()
        .find(|s| s.typ == SheetType::WorkSheet)
        .map(|s| s.name.clone())
        .ok_or_else(|| ReadError::Unreadable("the workbook has no worksheet".to_owned()))?;
    let mut cells = workbook.worksheet_cells_reader(&name).map_err(unreadable)?;
    let mut rows: BTreeMap<u32, Vec<ReadCell>> = BTreeMap::new();
    while let Some(cell) = cells.next_cell().map_err(unreadable)? {
        let value = read_cell(cell.get_value());
        if value.is_empty() {
            continue;
        }
        let (r, c) = cell.get_position();
        let number = r.saturating_add(1);
        let c = c as usize;
        if c >= limits.max_columns {
            return Err(ReadError::TooManyColumns { row: number });
        }
        let row = rows.entry(number).or_default();
        if row.len() <= c {
            row.resize(c + 1, ReadCell::Empty);
        }
        row[c] = value;
        if rows.len() > limits.max_rows {
            return Err(ReadError::TooManyRows);
        }
    }
    if rows.is_empty() {
        return Err(ReadError::Empty);
    }
    Ok(ReadSheet { format: FileFormat::Xlsx, rows: rows.into_iter().map(|(number, cells)| ReadRow { number, cells }).collect() })
}

/// A calamine value as the domain reads it: text, a number as the exact decimal of what the
/// file holds, or a described value that is neither.
fn read_cell(value: &DataRef<'_>) -> ReadCell {
    let text = |s: &str| if s.trim().is_empty() { ReadCell::Empty } else { ReadCell::Text(s.to_owned()) };
    match value {
        DataRef::Empty => ReadCell::Empty,
        DataRef::String(s) => text(s),
        DataRef::SharedString(s) => text(s),
        DataRef::Int(n) => ReadCell::Text(n.to_string()),
        // Rust prints a double as the shortest decimal that reads back as the same double,
        // never in exponent form: 1234.56 stays 1234.56, a formula's 0.1+0.2 shows as the
        // 0.30000000000000004 it is.
        DataRef::Float(f) if f.is_finite() => ReadCell::Text(if *f == 0.0 { "0".to_owned() } else { f.to_string() }),
        DataRef::Float(_) => ReadCell::Other("a number that is not finite".to_owned()),
        DataRef::Bool(b) => ReadCell::Other(format!("the logical value {}", if *b { "TRUE" } else { "FALSE" })),
        DataRef::DateTime(_) | DataRef::DateTimeIso(_) => ReadCell::Other("a date or time".to_owned()),
        DataRef::DurationIso(_) => ReadCell::Other("a duration".to_owned()),
        DataRef::Error(e) => ReadCell::Other(format!("the error value {e}")),
    }
}

/// The text of a csv file: UTF-8 (with or without a byte order mark), else GBK.
fn decode(bytes: &[u8]) -> Result<std::borrow::Cow<'_, str>, ReadError> {
    let bytes = bytes.strip_prefix(UTF8_BOM).unwrap_or(bytes);
    if let Ok(text) = std::str::from_utf8(bytes) {
        return Ok(text.into());
    }
    encoding_rs::GBK
        .decode_without_bom_handling_and_without_replacement(bytes)
        .ok_or_else(|| ReadError::NotSpreadsheet("bytes that are neither UTF-8 nor GBK text".to_owned()))
}

fn csv(bytes: &[u8], limits: ReadLimits) -> Result<ReadSheet, ReadError> {
    let text = decode(bytes)?;
    let mut reader = csv::ReaderBuilder::new().has_headers(false).flexible(true).from_reader(text.as_bytes());
    let mut rows = Vec::new();
    let mut record = csv::StringRecord::new();
    // A spreadsheet shows a record as one row however many lines a quoted value spans: its
    // row is the previous record's row plus the lines between the two records.
    let (mut last_row, mut last_line) = (0u64, 0u64);
    loop {
        match reader.read_record(&mut record) {
            Ok(false) => break,
            Ok(true) => {}
            Err(e) => return Err(ReadError::Unreadable(format!("not valid csv ({e})"))),
        }
        let line = record.position().map_or(last_line + 1, |p| p.line());
        let row = last_row + line.saturating_sub(last_line).max(1);
        last_row = row;
        last_line = line + record.iter().map(|f| f.matches('\n').count() as u64).sum::<u64>();
        let number = u32::try_from(row).map_err(|_| ReadError::TooManyRows)?;
        let mut cells: Vec<ReadCell> =
            record.iter().map(|f| if f.trim().is_empty() { ReadCell::Empty } else { ReadCell::Text(f.to_owned()) }).collect();
        while cells.last().is_some_and(ReadCell::is_empty) {
            cells.pop();
        }
        if cells.is_empty() {
            continue;
        }
        if cells.len() > limits.max_columns {
            return Err(ReadError::TooManyColumns { row: number });
        }
        rows.push(ReadRow { number, cells });
        if rows.len() > limits.max_rows {
            return Err(ReadError::TooManyRows);
        }
    }
    if rows.is_empty() {
        return Err(ReadError::Empty);
    }
    Ok(ReadSheet { format: FileFormat::Csv, rows })
}
