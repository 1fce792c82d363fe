//! Sheets as spreadsheet files: the export of a sheet (every item with every input and
//! computed column, and a totals row), the batch-transfer file a bank's portal takes, the
//! import template, and the import of item inputs from an xlsx or csv file — all or nothing,
//! errors by row and column. Every download is in the audit trail.
use super::{PayrollService, audit_json, new_item};
use crate::api::{BankFileParams, ExportParams, TemplateParams};
use crate::files::import::{Errors, ImportRow, read_rows, too_many_rows};
use crate::files::{
    FileFormat, OutputFormat, ReadError, ReadLimits, ReadSheet, SheetFile, Table, TextEncoding, WriteError, bank, export, import,
};
use crate::lifecycle::{SheetAction, SheetStatus};
use crate::model::*;
use atrium_kernel::Reason;
use atrium_kernel::permission::EMPLOYEE_READ_SENSITIVE;
use atrium_kernel::{Actor, AuditRecord, Error, FieldError, Id, Money, Result, StrEnum};
use serde_json::json;
use std::collections::{HashMap, HashSet};

/// Columns a reader looks at: the import has 9; more is someone else's spreadsheet.
const MAX_IMPORT_COLUMNS: usize = 64;

/// A writer's failure as the caller sees it; `cell` names an unencodable cell's field.
fn write_error(e: WriteError, cell: impl FnOnce(Option<usize>, usize) -> FieldError) -> Error {
    match e {
        WriteError::Unencodable { row, column } => Error::Blocked(Reason::SheetItems, vec![cell(row, column)]),
        WriteError::Failed(cause) => Error::internal(format!("cannot write a spreadsheet: {cause}")),
    }
}

/// A reader's refusal as the caller's 400 on the file.
fn read_error(e: ReadError, employees: usize) -> Error {
    let message = match e {
        ReadError::Empty => "is empty".to_owned(),
        ReadError::NotSpreadsheet(what) => format!("is not an xlsx workbook or a csv file ({what}); save it as .xlsx or .csv"),
        ReadError::Unreadable(why) => format!("cannot be read: {why}"),
        ReadError::TooManyRows => too_many_rows(employees),
        ReadError::TooManyColumns { row } => {
            format!(
                "has a value past column {} in row {row}; the import has {} columns",
                crate::files::column_letters(MAX_IMPORT_COLUMNS - 1),
                import::IMPORT_COLUMNS.len()
            )
        }
        ReadError::TooLarge(what) => format!("is too large: {what}"),
    };
    Error::invalid("file", message)
}

impl PayrollService {
    /// The sheet as an xlsx or csv file: each item with every input and computed column, and
    /// a totals row; money as yuan with two decimals. Audited (`payroll_sheet.export`).
    pub async fn export(&self, actor: &Actor, id: Id, params: ExportParams) -> Result<SheetFile> {
        let format = FileFormat::parse("format", params.format.as_deref(), FileFormat::Xlsx)?;
        let sheet = self.sheet(actor, id).await?;
        let tenant = self.tenant(actor, sheet.tenant_id).await?;
        let items = self.repo.sheet_items(id).await?;
        let table = export::sheet_table(&sheet, &items)?;
        // Excel reads a UTF-8 csv as UTF-8 only with a byte order mark.
        let output = match format {
            FileFormat::Xlsx => OutputFormat::Xlsx,
            FileFormat::Csv => OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: true },
        };
        let bytes = self
            .files
            .writer
            .write(table, output)
            .await
            .map_err(|e| write_error(e, |_, column| FieldError::new("file", format!("column {column} cannot be written"))))?;
        let audit = AuditRecord::by(actor, self.clock.now(), "payroll_sheet.export", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .with_after(json!({"format": format.as_str(), "items": items.len()}));
        self.repo.record_audit(audit).await?;
        Ok(SheetFile {
            file_name: format!("payroll-{}-{}.{}", sheet.period, sheet.id, format.extension()),
            content_type: output.content_type(),
            bytes,
        })
    }

    /// The batch-transfer file of an approved or sent sheet: one line per employee paid
    /// (net pay above 0) with the account's name and number, the bank, the net pay in yuan and
    /// a remark naming the period. Needs `employee:read_sensitive` (the account numbers are in
    /// full; 403 without). Each line pays the account kept when the sheet was approved, not
    /// what the employee record says now. 409 when the sheet is not approved or sent, or when
    /// an employee it pays had no bank account (naming them; no file). Audited
    /// (`payroll_sheet.bank_file`).
    pub async fn bank_file(&self, actor: &Actor, id: Id, params: BankFileParams) -> Result<SheetFile> {
        actor.require(EMPLOYEE_READ_SENSITIVE.name)?;
        if FileFormat::parse("format", params.format.as_deref(), FileFormat::Csv)? != FileFormat::Csv {
            return Err(Error::invalid("format", "a bank file is csv: bank portals take csv"));
        }
        let encoding = TextEncoding::parse("encoding", params.encoding.as_deref())?;
        let sheet = self.sheet(actor, id).await?;
        if !matches!(sheet.status, SheetStatus::Approved | SheetStatus::Sent) {
            return Err(Error::conflict(
                Reason::State,
                format!("a bank file pays an approved sheet, and this sheet is {}; approve it first", sheet.status.as_str()),
            ));
        }
        let tenant = self.tenant(actor, sheet.tenant_id).await?;
        let items = self.repo.sheet_items(id).await?;
        let paid = bank::paid(&items);
        let ids: Vec<Id> = paid.iter().map(|(_, item, _)| item.employee_id).collect();
        // The accounts kept with the approval: one changed on the employee record since is not
        // paid by this sheet. A sheet approved before accounts were kept reads the records.
        let (accounts, of) = match self.files.accounts.approved_accounts(sheet.tenant_id, id).await? {
            Some(kept) => (kept, bank::AccountsOf::Approval),
            None if ids.is_empty() => (HashMap::new(), bank::AccountsOf::Records),
            None => (self.files.accounts.bank_accounts(sheet.tenant_id, ids).await?, bank::AccountsOf::Records),
        };
        let table = bank::bank_table(&sheet, &items, &accounts, of).map_err(|errors| Error::Blocked(Reason::SheetItems, errors))?;
        let total = Money::checked_sum(paid.iter().map(|(_, _, m)| *m))
            .map_err(|_| Error::conflict(Reason::TotalTooLarge, "the bank file's total is too large to write; split the sheet"))?;
        let lines = table.rows.len();
        let output = OutputFormat::Csv { encoding, bom: false };
        let bytes = self.files.writer.write(table, output).await.map_err(|e| {
            write_error(e, |row, column| {
                let column_name = bank::BANK_COLUMNS.get(column).map_or("", |c| c.0);
                match row.and_then(|r| paid.get(r)) {
                    Some((i, item, _)) => FieldError::new(
                        format!("items[{i}].{}", if column == 2 { "bank_name" } else { "employee_name" }),
                        format!(
                            "{}: the {column_name} column of this employee's line has a character {} cannot write; download the file in \
                             utf-8, or correct the employee record",
                            item.employee_name,
                            encoding.as_str().to_uppercase()
                        ),
                    ),
                    None => FieldError::new("encoding", format!("the file cannot be written in {}", encoding.as_str())),
                }
            })
        })?;
        let audit = AuditRecord::by(actor, self.clock.now(), "payroll_sheet.bank_file", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .with_after(json!({"format": "csv", "encoding": encoding.as_str(), "lines": lines, "total": total}));
        self.repo.record_audit(audit).await?;
        Ok(SheetFile { file_name: format!("bank-transfer-{}-{}.csv", sheet.period, sheet.id), content_type: output.content_type(), bytes })
    }

    /// The import's template: the header row (`employee_no`, `employee_name` and the amount
    /// columns), as xlsx (the default; the employee columns formatted as text) or csv.
    pub async fn import_template(&self, params: TemplateParams) -> Result<SheetFile> {
        let format = FileFormat::parse("format", params.format.as_deref(), FileFormat::Xlsx)?;
        let output = match format {
            FileFormat::Xlsx => OutputFormat::Xlsx,
            FileFormat::Csv => OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: true },
        };
        let table: Table = import::template();
        let bytes = self
            .files
            .writer
            .write(table, output)
            .await
            .map_err(|e| write_error(e, |_, _| FieldError::new("format", "the template cannot be written")))?;
        Ok(SheetFile { file_name: format!("payroll-import-template.{}", format.extension()), content_type: output.content_type(), bytes })
    }

    /// Imports item inputs from an xlsx or csv file into a draft or calculated sheet: each row
    /// (keyed by `employee_no`) replaces that employee's inputs, or adds the employee to the
    /// sheet; other items stay. All or nothing: any error (by row and column) changes nothing.
    /// The sheet goes back to `draft`, as an edit does.
    pub async fn import(&self, actor: &Actor, id: Id, file: Vec<u8>) -> Result<SheetDetail> {
        let before = self.sheet(actor, id).await?;
        let status = before.status.after(SheetAction::Edit)?;
        let tenant = self.tenant(actor, before.tenant_id).await?;
        let employees = usize::try_from(self.repo.employee_count(before.tenant_id).await?).unwrap_or(0);
        let limits = ReadLimits { max_rows: employees.saturating_add(1), max_columns: MAX_IMPORT_COLUMNS };
        let read: ReadSheet = self.files.reader.read(file, limits).await.map_err(|e| read_error(e, employees))?;
        // Every error at once: the cells', then the employees' of the rows that name one.
        let (rows, mut errors) = read_rows(&read, before.kind, employees);
        let items = self.imported_items(before.tenant_id, &rows, &mut errors).await?;
        if !errors.is_empty() {
            return Err(Error::Invalid(errors.into_list()));
        }

        let mut merged = self.repo.sheet_items(id).await?;
        let (mut replaced, mut added) = (0usize, 0usize);
        let mut on_sheet: HashMap<Id, usize> = merged.iter().enumerate().map(|(i, item)| (item.employee_id, i)).collect();
        for item in items {
            match on_sheet.get(&item.employee_id) {
                Some(&i) => {
                    merged[i].adjustments = item.adjustments;
                    replaced += 1;
                }
                None => {
                    on_sheet.insert(item.employee_id, merged.len());
                    merged.push(item);
                    added += 1;
                }
            }
        }
        for item in &mut merged {
            // The calculation is gone, as after an edit: ids and figures are the store's anew.
            item.id = 0;
            item.line = None;
            item.delivery = None;
        }
        let now = self.clock.now();
        let mut after = before.clone();
        after.status = status;
        after.totals = SheetTotals::of(&merged)?;
        after.calculated_by = None;
        after.calculated_at = None;
        after.ytd_basis = None;
        after.updated_at = now;
        let mut after_json = audit_json(&after);
        after_json["import"] = json!({"format": read.format.as_str(), "rows": rows.len(), "replaced": replaced, "added": added});
        let audit = AuditRecord::by(actor, now, "payroll_sheet.import", "payroll_sheet", Some(id))
            .owned_by(tenant.partner_id, Some(tenant.id))
            .change(Some(&audit_json(&before)), Some(&after_json));
        let saved = self.repo.update_sheet(after, ItemsWrite::Replace(merged), atrium_kernel::Effects::audited(audit)).await?;
        self.detail(saved).await
    }

    /// The items the rows make, each for the tenant's employee its number names; `errors` gets
    /// unknown numbers and names that are not the employee's.
    async fn imported_items(&self, tenant_id: Id, rows: &[ImportRow], errors: &mut Errors) -> Result<Vec<SheetItem>> {
        if rows.is_empty() {
            return Ok(Vec::new());
        }
        let numbers: Vec<String> = rows.iter().map(|r| r.employee_no.clone()).collect::<HashSet<_>>().into_iter().collect();
        let found = self.repo.employees_by_no(tenant_id, numbers).await?;
        let by_no: HashMap<&str, &PayrollEmployee> = found.iter().filter_map(|e| e.employee_no.as_deref().map(|no| (no, e))).collect();
        let mut items = Vec::with_capacity(rows.len());
        for r in rows {
            let Some(e) = by_no.get(r.employee_no.as_str()) else {
                errors.push(format!("rows[{}].employee_no", r.row), format!("no employee of this tenant has the number {}", r.employee_no));
                continue;
            };
            if let Some(name) = &r.employee_name
                && name.trim() != e.name.trim()
            {
                errors.push(
                    format!("rows[{}].employee_name", r.row),
                    format!("employee {} is {}, not {name}; check the number", r.employee_no, e.name),
                );
                continue;
            }
            items.push(new_item(e, r.adjustments));
        }
        Ok(items)
    }
}
