//! An import's columns, and the rows of an imported file checked into item inputs.
//!
//! Errors name the row as a spreadsheet shows it (the header is row 1) and the column by its
//! name: `rows[3].bonus`. Header problems name the column: `columns.employee_no`,
//! `columns.<the unknown name>`. What is wrong with the file as a whole is `file`. Each message
//! starts with the cell (`D3: …`) where there is one.
use super::{ReadCell, ReadSheet, Table, column_letters, parse_yuan};
use crate::engine::SheetKind;
use crate::files::{Column, ColumnKind};
use crate::model::Adjustments;
use atrium_kernel::{FieldError, Money};
use std::collections::HashMap;

/// Every column an import knows, in the template's order: the employee's number (required),
/// their name (optional; when given it must be the employee's, a guard against a mistyped
/// number), and the amounts.
pub const IMPORT_COLUMNS: [&str; 9] = [
    "employee_no",
    "employee_name",
    "allowance",
    "overtime",
    "bonus",
    "leave_deduction",
    "other_pre_tax_deduction",
    "after_tax_deduction",
    "annual_bonus",
];

/// At most this many errors are listed for one file; a last entry says how many more there were.
pub(crate) const MAX_IMPORT_ERRORS: usize = 100;

/// The import template: the header row alone.
pub(crate) fn template() -> Table {
    let columns = IMPORT_COLUMNS
        .iter()
        .map(|&name| Column::new(name, if name.starts_with("employee_") { ColumnKind::Text } else { ColumnKind::Money }))
        .collect();
    Table { sheet_name: "Payroll import".to_owned(), columns, rows: Vec::new(), totals: None }
}

/// One row of an import, checked: whom it pays and what.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ImportRow {
    /// The row's number as the spreadsheet shows it.
    pub row: u32,
    pub employee_no: String,
    /// The name the row gives, if any, to check against the employee's.
    pub employee_name: Option<String>,
    pub adjustments: Adjustments,
}

/// Collects field errors up to [`MAX_IMPORT_ERRORS`], counting the rest.
#[derive(Debug, Default)]
pub(crate) struct Errors {
    pub list: Vec<FieldError>,
    pub more: usize,
}

impl Errors {
    pub fn push(&mut self, field: impl Into<String>, message: impl Into<String>) {
        if self.list.len() < MAX_IMPORT_ERRORS {
            self.list.push(FieldError::new(field, message));
        } else {
            self.more += 1;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The list, with a last entry counting what was left out.
    pub fn into_list(mut self) -> Vec<FieldError> {
        if self.more > 0 {
            self.list.push(FieldError::new("file", format!("{} more errors not listed; correct these and import again", self.more)));
        }
        self.list
    }
}

/// What a cell that holds something other than text or a number is, in a message.
fn not_text(cell_ref: &str, what: &str, expected: &str) -> String {
    format!("{cell_ref}: {what} is not {expected}")
}

/// The rows of `sheet` as item inputs of a sheet of `kind`, or every error found; see
/// [`read_rows`].
#[cfg(test)]
pub(crate) fn parse_rows(sheet: &ReadSheet, kind: SheetKind, max_rows: usize) -> Result<Vec<ImportRow>, Errors> {
    let (rows, errors) = read_rows(sheet, kind, max_rows);
    if errors.is_empty() { Ok(rows) } else { Err(errors) }
}

/// The rows of `sheet` as item inputs of a sheet of `kind`, and every error found. The
/// header's errors come first: with a header that names no `employee_no` column, no rows are
/// read. Rows that name an employee are returned even when a cell of theirs is wrong, so the
/// caller can check their employees too and report every error at once. A file of more than
/// `max_rows` rows below its header (the tenant's number of employees) is refused whole.
pub(crate) fn read_rows(sheet: &ReadSheet, kind: SheetKind, max_rows: usize) -> (Vec<ImportRow>, Errors) {
    let mut errors = Errors::default();
    let Some((header, rows)) = sheet.rows.split_first() else {
        errors.push("file", "is empty: it has no header row (employee_no and the amounts)");
        return (Vec::new(), errors);
    };
    let known = IMPORT_COLUMNS.join(", ");
    // Column index → its name, for the columns the header names.
    let mut columns: HashMap<usize, &'static str> = HashMap::new();
    let mut seen: HashMap<&'static str, usize> = HashMap::new();
    // Columns whose header holds something, known or not: values under the others are stray.
    let headed: Vec<usize> = header.cells.iter().enumerate().filter(|(_, c)| !c.is_empty()).map(|(i, _)| i).collect();
    for (i, cell) in header.cells.iter().enumerate() {
        let cell_ref = format!("{}{}", column_letters(i), header.number);
        let text = match cell {
            ReadCell::Empty => continue,
            ReadCell::Text(t) if t.trim().is_empty() => continue,
            ReadCell::Text(t) => t.trim().to_owned(),
            ReadCell::Other(what) => {
                errors.push("columns", format!("{cell_ref}: {what} is not a column name; the columns are {known}"));
                continue;
            }
        };
        let lower = text.to_ascii_lowercase();
        match IMPORT_COLUMNS.iter().find(|&&c| c == lower) {
            Some(&name) => {
                if let Some(&first) = seen.get(name) {
                    errors.push(
                        format!("columns.{name}"),
                        format!(
                            "{cell_ref}: {name} is also the column in {}{}; a column may appear once",
                            column_letters(first),
                            header.number
                        ),
                    );
                } else {
                    seen.insert(name, i);
                    columns.insert(i, name);
                }
            }
            None => errors.push(format!("columns.{text}"), format!("{cell_ref}: unknown column {text:?}; the columns are {known}")),
        }
    }
    if !seen.contains_key("employee_no") {
        errors.push("columns.employee_no", "is required: the header row must name the column of employee numbers (employee_no)");
        return (Vec::new(), errors);
    }
    if rows.is_empty() {
        errors.push("file", "has no rows below its header");
        return (Vec::new(), errors);
    }
    if rows.len() > max_rows {
        errors.push("file", too_many_rows(max_rows));
        return (Vec::new(), errors);
    }

    let mut out = Vec::with_capacity(rows.len());
    let mut first_row_of: HashMap<String, u32> = HashMap::with_capacity(rows.len());
    let mut unnamed_reported: Vec<usize> = Vec::new();
    for row in rows {
        let n = row.number;
        let mut employee_no = None;
        let mut employee_name = None;
        let mut amounts: HashMap<&'static str, Money> = HashMap::new();
        for (i, cell) in row.cells.iter().enumerate() {
            let cell_ref = format!("{}{n}", column_letters(i));
            let Some(&name) = columns.get(&i) else {
                if !cell.is_empty() && !headed.contains(&i) && !unnamed_reported.contains(&i) {
                    unnamed_reported.push(i);
                    errors.push(
                        "columns",
                        format!(
                            "{cell_ref}: a value in a column without a name ({}{} is empty); name the column or clear it",
                            column_letters(i),
                            header.number
                        ),
                    );
                }
                continue;
            };
            let field = format!("rows[{n}].{name}");
            match (name, cell) {
                (_, ReadCell::Other(what)) => {
                    let expected = match name {
                        "employee_no" => "an employee number",
                        "employee_name" => "a name",
                        _ => "an amount",
                    };
                    errors.push(field, not_text(&cell_ref, what, expected));
                }
                ("employee_no", ReadCell::Text(t)) if !t.trim().is_empty() => employee_no = Some(t.trim().to_owned()),
                ("employee_name", ReadCell::Text(t)) if !t.trim().is_empty() => employee_name = Some(t.trim().to_owned()),
                ("employee_no" | "employee_name", _) => {}
                (_, ReadCell::Empty) => {}
                (_, ReadCell::Text(t)) => match parse_yuan(t) {
                    Ok(amount) => {
                        amounts.insert(name, amount);
                    }
                    Err(message) => errors.push(field, format!("{cell_ref}: {:?} {message}", t.trim())),
                },
            }
        }
        let Some(no) = employee_no else {
            let letter = seen.get("employee_no").map(|&i| column_letters(i)).unwrap_or_default();
            errors.push(format!("rows[{n}].employee_no"), format!("{letter}{n}: is required: the number of the employee this row pays"));
            continue;
        };
        if let Some(first) = first_row_of.get(&no) {
            errors.push(format!("rows[{n}].employee_no"), format!("employee {no} is also on row {first}; an employee may have one row"));
            continue;
        }
        first_row_of.insert(no.clone(), n);
        let amount = |name: &str| amounts.get(name).copied().unwrap_or(Money::ZERO);
        let adjustments = Adjustments {
            allowance: amount("allowance"),
            overtime: amount("overtime"),
            bonus: amount("bonus"),
            leave_deduction: amount("leave_deduction"),
            other_pre_tax_deduction: amount("other_pre_tax_deduction"),
            after_tax_deduction: amount("after_tax_deduction"),
            annual_bonus: amount("annual_bonus"),
        };
        if kind == SheetKind::Supplementary && adjustments.leave_deduction != Money::ZERO {
            errors.push(
                format!("rows[{n}].leave_deduction"),
                "a supplementary sheet pays no base salary, so it carries no leave deduction (the period's regular sheet does)",
            );
        }
        out.push(ImportRow { row: n, employee_no: no, employee_name, adjustments });
    }
    (out, errors)
}

/// The message of a file with more rows than the tenant has employees.
pub(crate) fn too_many_rows(employees: usize) -> String {
    format!("has more rows below its header than the tenant has employees ({employees}); an employee may have one row")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::files::{FileFormat, ReadRow};

    fn text(s: &str) -> ReadCell {
        if s.is_empty() { ReadCell::Empty } else { ReadCell::Text(s.to_owned()) }
    }

    /// A sheet from rows of text, numbered from 1.
    fn sheet(rows: &[&[&str]]) -> ReadSheet {
        ReadSheet {
            format: FileFormat::Csv,
            rows: rows
                .iter()
                .enumerate()
                .map(|(i, cells)| ReadRow { number: i as u32 + 1, cells: cells.iter().map(|c| text(c)).collect() })
                .collect(),
        }
    }

    fn errors(result: Result<Vec<ImportRow>, Errors>) -> Vec<(String, String)> {
        match result {
            Ok(rows) => panic!("expected errors, got {rows:?}"),
            Err(e) => e.into_list().into_iter().map(|f| (f.field, f.message)).collect(),
        }
    }

    fn fields(result: Result<Vec<ImportRow>, Errors>) -> Vec<String> {
        errors(result).into_iter().map(|(f, _)| f).collect()
    }

    #[test]
    fn rows_become_item_inputs_in_fen() {
        let s = sheet(&[
            &["employee_no", "employee_name", "bonus", "leave_deduction", "annual_bonus"],
            &["E001", "张三", "1,000.50", "", "36000"],
            &["E002", "", "0.01", "200", ""],
        ]);
        let rows = parse_rows(&s, SheetKind::Regular, 10).unwrap();
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].row, rows[0].employee_no.as_str(), rows[0].employee_name.as_deref()), (2, "E001", Some("张三")));
        assert_eq!(rows[0].adjustments.bonus, Money::from_fen(100_050));
        assert_eq!(rows[0].adjustments.annual_bonus, Money::from_fen(3_600_000));
        assert_eq!(rows[0].adjustments.leave_deduction, Money::ZERO);
        // Columns the file leaves out are zero: a row replaces the inputs.
        assert_eq!(rows[0].adjustments.allowance, Money::ZERO);
        assert_eq!((rows[1].employee_name.as_ref(), rows[1].adjustments.bonus), (None, Money::from_fen(1)));
        assert_eq!(rows[1].adjustments.leave_deduction, Money::from_fen(20_000));
    }

    #[test]
    fn column_names_ignore_case_and_blanks_and_blank_columns_are_skipped() {
        let s = sheet(&[&[" Employee_No ", "", "BONUS"], &["E1", "", "5"]]);
        let rows = parse_rows(&s, SheetKind::Regular, 10).unwrap();
        assert_eq!(rows[0].adjustments.bonus, Money::from_yuan(5));
    }

    #[test]
    fn an_empty_file_is_an_error_on_the_file() {
        assert_eq!(fields(parse_rows(&sheet(&[]), SheetKind::Regular, 10)), ["file"]);
        let only_header = errors(parse_rows(&sheet(&[&["employee_no", "bonus"]]), SheetKind::Regular, 10));
        assert_eq!(only_header[0].0, "file");
        assert!(only_header[0].1.contains("no rows below"), "{only_header:?}");
    }

    #[test]
    fn unknown_and_repeated_columns_are_named_with_their_cell() {
        let s = sheet(&[&["employee_no", "bonus", "奖金", "bonus", "salary"], &["E1", "1", "2", "3", "4"]]);
        let e = errors(parse_rows(&s, SheetKind::Regular, 10));
        assert_eq!(e.iter().map(|(f, _)| f.as_str()).collect::<Vec<_>>(), ["columns.奖金", "columns.bonus", "columns.salary"]);
        assert!(e[0].1.starts_with("C1: unknown column \"奖金\"") && e[0].1.contains("employee_no, employee_name, allowance"), "{e:?}");
        assert!(e[1].1.starts_with("D1: bonus is also the column in B1"), "{e:?}");
    }

    #[test]
    fn a_missing_employee_no_column_stops_at_the_header() {
        let s = sheet(&[&["employee_name", "bonus"], &["张三", "x"]]);
        assert_eq!(fields(parse_rows(&s, SheetKind::Regular, 10)), ["columns.employee_no"]);
    }

    #[test]
    fn bad_amounts_are_named_by_row_and_column() {
        let s = sheet(&[
            &["employee_no", "allowance", "bonus"],
            &["E1", "1.005", "-3"],
            &["E2", "100", "abc"],
            &["E3", "10000000000.01", "12,34"],
        ]);
        let e = errors(parse_rows(&s, SheetKind::Regular, 10));
        let f: Vec<&str> = e.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(f, ["rows[2].allowance", "rows[2].bonus", "rows[3].bonus", "rows[4].allowance", "rows[4].bonus"]);
        assert!(e[0].1.starts_with("B2: \"1.005\" has more than two decimals"), "{}", e[0].1);
        assert!(e[1].1.starts_with("C2: \"-3\" must not be negative"), "{}", e[1].1);
        assert!(e[2].1.starts_with("C3: \"abc\" must be an amount in yuan"), "{}", e[2].1);
        assert!(e[3].1.contains("at most 10000000000.00 yuan"), "{}", e[3].1);
    }

    #[test]
    fn a_value_that_is_not_text_or_a_number_is_refused_in_its_cell() {
        let mut s = sheet(&[&["employee_no", "bonus"], &["E1", ""]]);
        s.rows[1].cells[1] = ReadCell::Other("a date".to_owned());
        let e = errors(parse_rows(&s, SheetKind::Regular, 10));
        assert_eq!(e, [("rows[2].bonus".to_owned(), "B2: a date is not an amount".to_owned())]);
    }

    #[test]
    fn a_row_without_an_employee_number_and_a_repeated_number_are_errors() {
        let s = sheet(&[&["bonus", "employee_no"], &["1", "E1"], &["2", ""], &["3", "E1"]]);
        let e = errors(parse_rows(&s, SheetKind::Regular, 10));
        assert_eq!(e[0], ("rows[3].employee_no".to_owned(), "B3: is required: the number of the employee this row pays".to_owned()));
        assert_eq!(e[1], ("rows[4].employee_no".to_owned(), "employee E1 is also on row 2; an employee may have one row".to_owned()));
    }

    #[test]
    fn more_rows_than_employees_is_refused_whole() {
        let s = sheet(&[&["employee_no"], &["E1"], &["E2"], &["E3"]]);
        let e = errors(parse_rows(&s, SheetKind::Regular, 2));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, "file");
        assert!(e[0].1.contains("than the tenant has employees (2)"), "{e:?}");
    }

    #[test]
    fn a_value_under_a_column_without_a_name_is_reported_once() {
        let s = sheet(&[&["employee_no", "", "bonus"], &["E1", "x", "1"], &["E2", "y", "2"]]);
        let e = errors(parse_rows(&s, SheetKind::Regular, 10));
        assert_eq!(e.len(), 1, "{e:?}");
        assert_eq!(e[0].0, "columns");
        assert!(e[0].1.starts_with("B2: a value in a column without a name (B1 is empty)"), "{e:?}");
    }

    #[test]
    fn a_supplementary_sheet_refuses_a_leave_deduction_but_not_a_zero_one() {
        let s = sheet(&[&["employee_no", "leave_deduction", "bonus"], &["E1", "0", "5"], &["E2", "1.00", "5"]]);
        let e = errors(parse_rows(&s, SheetKind::Supplementary, 10));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].0, "rows[3].leave_deduction");
        assert!(parse_rows(&s, SheetKind::Regular, 10).is_ok());
    }

    #[test]
    fn rows_keep_the_numbers_the_spreadsheet_shows() {
        // A blank row 3 is not in the read sheet; row 4 is still row 4.
        let mut s = sheet(&[&["employee_no", "bonus"], &["E1", "1"], &["E2", "x"]]);
        s.rows[2].number = 4;
        assert_eq!(fields(parse_rows(&s, SheetKind::Regular, 10)), ["rows[4].bonus"]);
    }

    #[test]
    fn errors_are_listed_up_to_a_hundred_and_counted_beyond() {
        let mut rows: Vec<Vec<String>> = vec![vec!["employee_no".into(), "bonus".into()]];
        for i in 0..130 {
            rows.push(vec![format!("E{i}"), "bad".into()]);
        }
        let s = ReadSheet {
            format: FileFormat::Csv,
            rows: rows
                .iter()
                .enumerate()
                .map(|(i, r)| ReadRow { number: i as u32 + 1, cells: r.iter().map(|c| text(c)).collect() })
                .collect(),
        };
        let e = errors(parse_rows(&s, SheetKind::Regular, 1000));
        assert_eq!(e.len(), MAX_IMPORT_ERRORS + 1);
        assert_eq!(e[MAX_IMPORT_ERRORS], ("file".to_owned(), "30 more errors not listed; correct these and import again".to_owned()));
    }
}
