//! Payroll sheets as spreadsheet files, as plain data: what an export, a bank-transfer file and
//! an import template hold (a [`Table`] of typed cells, which a
//! [`SheetWriter`](crate::SheetWriter) encodes as xlsx or csv bytes), and what an import reads
//! (a [`ReadSheet`] of text cells with their row numbers, which a
//! [`SheetReader`](crate::SheetReader) decodes from xlsx or csv bytes). No format library is
//! used here: the adapter (`atrium-tabular`) does the bytes, the domain says what they hold
//! and checks what comes in.
//!
//! - `yuan`: amounts as a spreadsheet holds them (`1234.56`) to fen, exactly;
//! - `export`: a sheet's items with every input and computed column and a totals row;
//! - `bank`: the batch-transfer file a bank's corporate portal takes;
//! - `import`: the import's columns, and rows checked into item inputs, errors by row and
//!   column.

pub(crate) mod bank;
pub(crate) mod export;
pub(crate) mod import;
mod yuan;

pub use bank::BANK_COLUMNS;
pub use export::EXPORT_COLUMNS;
pub use import::IMPORT_COLUMNS;
pub use yuan::parse_yuan;

use atrium_kernel::{Error, Money};

/// The largest file an import takes (413 above): 10,000 rows are about 0.3 MiB as xlsx and
/// 0.8 MiB as csv, so this holds a tenant of 100,000 employees in either.
pub const MAX_IMPORT_BYTES: u64 = 16 * 1024 * 1024;

/// A spreadsheet file format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FileFormat {
    /// An Office Open XML workbook (Excel 2007 and later).
    Xlsx,
    /// Comma-separated values.
    Csv,
}

impl FileFormat {
    /// `xlsx` or `csv` (a query parameter's value; `default` without one).
    pub fn parse(field: &str, value: Option<&str>, default: FileFormat) -> Result<FileFormat, Error> {
        match value {
            None => Ok(default),
            Some("xlsx") => Ok(FileFormat::Xlsx),
            Some("csv") => Ok(FileFormat::Csv),
            Some(_) => Err(Error::invalid(field, "must be xlsx or csv")),
        }
    }

    /// The file name extension, without the dot: `xlsx` or `csv`.
    pub fn extension(self) -> &'static str {
        match self {
            FileFormat::Xlsx => "xlsx",
            FileFormat::Csv => "csv",
        }
    }

    /// The format's name, as a query parameter gives it: `xlsx` or `csv`.
    pub fn as_str(self) -> &'static str {
        self.extension()
    }
}

/// The character encoding of a csv file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextEncoding {
    /// UTF-8.
    Utf8,
    /// GBK (code page 936), which many banks' portals and Chinese Excel still use.
    Gbk,
}

impl TextEncoding {
    /// `utf-8` (also without one) or `gbk`.
    pub fn parse(field: &str, value: Option<&str>) -> Result<TextEncoding, Error> {
        match value {
            None | Some("utf-8") => Ok(TextEncoding::Utf8),
            Some("gbk") => Ok(TextEncoding::Gbk),
            Some(_) => Err(Error::invalid(field, "must be utf-8 or gbk")),
        }
    }

    /// The `charset` of a content type.
    pub fn as_str(self) -> &'static str {
        match self {
            TextEncoding::Utf8 => "utf-8",
            TextEncoding::Gbk => "gbk",
        }
    }
}

/// How a [`Table`] is to be written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputFormat {
    /// An xlsx workbook.
    Xlsx,
    /// `bom`: a UTF-8 file starts with a byte order mark, which Excel needs to read it as
    /// UTF-8 (a bank portal may not want one; GBK has none).
    Csv {
        /// The character encoding.
        encoding: TextEncoding,
        /// Whether a UTF-8 file starts with a byte order mark.
        bom: bool,
    },
}

/// The media type of an xlsx workbook.
pub const XLSX_CONTENT_TYPE: &str = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";

impl OutputFormat {
    /// The file's media type, with its charset for csv.
    pub fn content_type(self) -> &'static str {
        match self {
            OutputFormat::Xlsx => XLSX_CONTENT_TYPE,
            OutputFormat::Csv { encoding: TextEncoding::Utf8, .. } => "text/csv; charset=utf-8",
            OutputFormat::Csv { encoding: TextEncoding::Gbk, .. } => "text/csv; charset=gbk",
        }
    }

    /// Whether the file is xlsx or csv, whatever its encoding.
    pub fn file_format(self) -> FileFormat {
        match self {
            OutputFormat::Xlsx => FileFormat::Xlsx,
            OutputFormat::Csv { .. } => FileFormat::Csv,
        }
    }
}

/// What a column holds, which decides how a writer formats it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ColumnKind {
    /// Text, kept as typed (an xlsx column formatted as text, so `007` stays `007`).
    Text,
    /// Money, as yuan with two decimals.
    Money,
    /// A whole number.
    Count,
}

/// A column of a [`Table`]: its header and kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Column {
    /// The header.
    pub name: String,
    /// What its cells hold, which decides how they are written.
    pub kind: ColumnKind,
}

impl Column {
    /// A column headed `name` of cells of `kind`.
    pub fn new(name: impl Into<String>, kind: ColumnKind) -> Self {
        Column { name: name.into(), kind }
    }
}

/// One cell of a table to write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cell {
    /// Nothing.
    Empty,
    /// Text, written as it is (never as a formula).
    Text(String),
    /// Written as yuan with two decimals: a number formatted `0.00` in xlsx (text where a
    /// spreadsheet's 15 significant digits would not hold it exactly), `1234.56` in csv.
    Money(Money),
    /// A whole number.
    Count(i64),
}

/// A table to write: a header row of named columns, the rows, and optionally a totals row
/// (set apart in xlsx). Every row has one cell per column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// The xlsx worksheet's name (at most 31 characters, none of `[]:*?/\`).
    pub sheet_name: String,
    /// The columns, left to right.
    pub columns: Vec<Column>,
    /// The rows, top to bottom, each with one cell per column.
    pub rows: Vec<Vec<Cell>>,
    /// A totals row below the rows, if any.
    pub totals: Option<Vec<Cell>>,
}

/// Why a table could not be written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteError {
    /// A text cell the csv's encoding cannot write (a character GBK does not have): its row,
    /// 0-based in [`Table::rows`] (`None` for the header or the totals row), and column.
    Unencodable {
        /// The row, 0-based in [`Table::rows`]; `None` for the header or the totals row.
        row: Option<usize>,
        /// The column, 0-based.
        column: usize,
    },
    /// Anything else (the format library failed); logged, a 500.
    Failed(String),
}

/// A file ready to download.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SheetFile {
    /// A plain ASCII name for `Content-Disposition`.
    pub file_name: String,
    /// The file's media type, for `Content-Type`.
    pub content_type: &'static str,
    /// The file's content.
    pub bytes: Vec<u8>,
}

/// How much of a file a reader may take before it stops: rows with a value (the header
/// included) and columns.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadLimits {
    /// The most rows with a value a reader takes, the header included.
    pub max_rows: usize,
    /// The most columns a reader takes.
    pub max_columns: usize,
}

/// One cell as read from a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadCell {
    /// Nothing (or a cell the file leaves out).
    Empty,
    /// A text cell as typed, or a number cell as the exact decimal of the number the file
    /// holds (`1234.56`; a formula's unrounded `0.30000000000000004` stays that).
    Text(String),
    /// A value that is neither text nor a number, described for an error message: a date,
    /// `TRUE`, an error value such as `#DIV/0!`.
    Other(String),
}

impl ReadCell {
    /// Whether the cell holds nothing but blanks.
    pub fn is_empty(&self) -> bool {
        match self {
            ReadCell::Empty => true,
            ReadCell::Text(t) => t.trim().is_empty(),
            ReadCell::Other(_) => false,
        }
    }
}

/// A row as read: its number as a spreadsheet shows it (the first row is 1) and its cells
/// from column A on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRow {
    /// The row's number as a spreadsheet shows it (the first row is 1).
    pub number: u32,
    /// Its cells from column A on.
    pub cells: Vec<ReadCell>,
}

/// A file as read: its rows that hold a value, in order (the first is the header), from the
/// first worksheet of a workbook.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadSheet {
    /// Whether the file was xlsx or csv.
    pub format: FileFormat,
    /// The rows that hold a value, in order; the first is the header.
    pub rows: Vec<ReadRow>,
}

/// Why a file could not be read. Each is the caller's 400 on the `file` field.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReadError {
    /// No bytes, or nothing but blanks.
    Empty,
    /// Neither an xlsx workbook nor csv text; says what it looks like.
    NotSpreadsheet(String),
    /// An xlsx or csv file that cannot be read; says why.
    Unreadable(String),
    /// More rows with a value than [`ReadLimits::max_rows`]; the reader stopped there.
    TooManyRows,
    /// A value in a column past [`ReadLimits::max_columns`], in the row numbered `row`.
    TooManyColumns {
        /// The row's number as a spreadsheet shows it.
        row: u32,
    },
    /// An xlsx workbook that unpacks to more than the reader takes.
    TooLarge(String),
}

/// The spreadsheet name of the 0-based column `index`: A, B, …, Z, AA, AB, …
pub fn column_letters(index: usize) -> String {
    let mut n = index + 1;
    let mut out = Vec::new();
    while n > 0 {
        let rem = (n - 1) % 26;
        out.push(b'A' + rem as u8);
        n = (n - 1) / 26;
    }
    out.reverse();
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_lettered_as_a_spreadsheet_does() {
        let letters: Vec<String> = [0, 1, 25, 26, 27, 51, 52, 701, 702].iter().map(|&i| column_letters(i)).collect();
        assert_eq!(letters, ["A", "B", "Z", "AA", "AB", "AZ", "BA", "ZZ", "AAA"]);
    }

    #[test]
    fn formats_and_encodings_are_named_in_queries() {
        assert_eq!(FileFormat::parse("format", None, FileFormat::Xlsx).ok(), Some(FileFormat::Xlsx));
        assert_eq!(FileFormat::parse("format", Some("csv"), FileFormat::Xlsx).ok(), Some(FileFormat::Csv));
        // Exactly the values the document lists.
        assert!(FileFormat::parse("format", Some("CSV"), FileFormat::Xlsx).is_err());
        assert!(matches!(FileFormat::parse("format", Some("pdf"), FileFormat::Xlsx), Err(Error::Invalid(e)) if e[0].field == "format"));
        assert_eq!(TextEncoding::parse("encoding", Some("utf-8")).ok(), Some(TextEncoding::Utf8));
        assert!(TextEncoding::parse("encoding", Some("UTF8")).is_err());
        assert_eq!(TextEncoding::parse("encoding", Some("gbk")).ok(), Some(TextEncoding::Gbk));
        assert!(matches!(TextEncoding::parse("encoding", Some("big5")), Err(Error::Invalid(e)) if e[0].field == "encoding"));
        assert_eq!(OutputFormat::Csv { encoding: TextEncoding::Gbk, bom: false }.content_type(), "text/csv; charset=gbk");
    }
}
