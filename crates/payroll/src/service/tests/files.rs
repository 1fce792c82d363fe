//! The spreadsheet use cases against mocked ports: what an export, a bank file and an import
//! hand the encoder and storage, what each audits, and what they refuse before anything is
//! written (403, 409, 400 by row and column).
use super::*;
use crate::api::{BankFileParams, ExportParams, TemplateParams};
use crate::engine::CalculatedLine;
use crate::files::{
    Cell, FileFormat, OutputFormat, ReadCell, ReadError, ReadRow, ReadSheet, Table, TextEncoding, WriteError, XLSX_CONTENT_TYPE,
};
use atrium_kernel::StrEnum;
use std::sync::Mutex;

fn reader_of_sensitive(user_id: Id) -> Actor {
    Actor::new(user_id, "s", Party::Tenant { tenant_id: TENANT, partner_id: None }, ["payroll:*", "employee:read_sensitive"])
}

fn numbered(mut e: PayrollEmployee, no: &str, name: &str) -> PayrollEmployee {
    e.employee_no = Some(no.to_owned());
    e.name = name.to_owned();
    e
}

fn paid(mut i: SheetItem, net_yuan: i64) -> SheetItem {
    i.line = Some(CalculatedLine { gross: Money::from_yuan(net_yuan), net_pay: Money::from_yuan(net_yuan), ..Default::default() });
    i
}

fn account(name: &str, no: &str) -> PayeeAccount {
    PayeeAccount { name: name.to_owned(), bank_name: Some("中国工商银行北京分行".to_owned()), account_no: no.to_owned() }
}

fn fields(err: &Error) -> Vec<String> {
    match err {
        Error::Invalid(f) | Error::Blocked(_, f) => f.iter().map(|f| f.field.clone()).collect(),
        other => panic!("expected field errors, got {other:?}"),
    }
}

/// A writer that keeps the table and format it was given and answers `bytes`.
fn capturing_writer(seen: Arc<Mutex<Vec<(Table, OutputFormat)>>>) -> MockSheetWriter {
    let mut writer = MockSheetWriter::new();
    writer.expect_write().times(1).returning(move |table, format| {
        seen.lock().unwrap().push((table, format));
        Ok(b"bytes".to_vec())
    });
    writer
}

/// A read sheet of text rows, numbered from 1.
fn read_sheet(rows: &[&[&str]]) -> ReadSheet {
    ReadSheet {
        format: FileFormat::Csv,
        rows: rows
            .iter()
            .enumerate()
            .map(|(i, cells)| ReadRow {
                number: i as u32 + 1,
                cells: cells.iter().map(|c| if c.is_empty() { ReadCell::Empty } else { ReadCell::Text((*c).to_owned()) }).collect(),
            })
            .collect(),
    }
}

fn reader_answering(sheet: ReadSheet) -> MockSheetReader {
    let mut reader = MockSheetReader::new();
    reader.expect_read().times(1).returning(move |_, _| Ok(sheet.clone()));
    reader
}

#[tokio::test]
async fn an_export_writes_every_item_and_a_totals_row_and_is_audited() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Calculated))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    let mut a = paid(item(11, 100), 9_000);
    a.adjustments.bonus = Money::from_fen(50_050);
    repo.expect_sheet_items().returning(move |_| Ok(vec![a.clone(), paid(item(12, 200), 1_000)]));
    repo.expect_record_audit()
        .withf(|a| a.action == "payroll_sheet.export" && a.target_id == Some(1) && a.after.as_ref().is_some_and(|v| v["format"] == "csv"))
        .times(1)
        .returning(|_| Ok(()));
    let seen = Arc::new(Mutex::new(vec![]));
    let svc =
        with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), capturing_writer(seen.clone()), MockSheetReader::new());

    let file = svc.export(&actor(9), 1, ExportParams { format: Some("csv".into()) }).await.unwrap();

    assert_eq!(
        (file.file_name.as_str(), file.content_type, file.bytes.as_slice()),
        ("payroll-2026-03-1.csv", "text/csv; charset=utf-8", &b"bytes"[..])
    );
    let (table, format) = seen.lock().unwrap().remove(0);
    assert_eq!(format, OutputFormat::Csv { encoding: TextEncoding::Utf8, bom: true });
    assert_eq!(table.rows.len(), 2);
    let col = |name: &str| table.columns.iter().position(|c| c.name == name).unwrap();
    assert_eq!(table.rows[0][col("bonus")], Cell::Money(Money::from_fen(50_050)));
    assert_eq!(table.rows[0][col("employee_name")], Cell::Text("E100".into()));
    let totals = table.totals.unwrap();
    assert_eq!(totals[0], Cell::Text("total".into()));
    assert_eq!(totals[col("net_pay")], Cell::Money(Money::from_yuan(10_000)));
    assert_eq!(totals[col("bonus")], Cell::Money(Money::from_fen(50_050)));
}

#[tokio::test]
async fn an_export_defaults_to_xlsx_and_refuses_another_format_before_reading_anything() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().times(1).returning(|_, _| Ok(Some(sheet(SheetStatus::Draft))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![item(11, 100)]));
    repo.expect_record_audit().times(1).returning(|_| Ok(()));
    let seen = Arc::new(Mutex::new(vec![]));
    let svc =
        with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), capturing_writer(seen.clone()), MockSheetReader::new());

    let err = svc.export(&actor(9), 1, ExportParams { format: Some("pdf".into()) }).await.unwrap_err();
    assert_eq!(fields(&err), ["format"]);
    let file = svc.export(&actor(9), 1, ExportParams::default()).await.unwrap();
    assert_eq!((file.content_type, file.file_name.as_str()), (XLSX_CONTENT_TYPE, "payroll-2026-03-1.xlsx"));
    // A draft's computed columns and their totals are empty.
    let (table, _) = seen.lock().unwrap().remove(0);
    let net = table.columns.iter().position(|c| c.name == "net_pay").unwrap();
    assert_eq!((&table.rows[0][net], &table.totals.unwrap()[net]), (&Cell::Empty, &Cell::Empty));
}

#[tokio::test]
async fn a_bank_file_needs_the_sensitive_permission_before_anything_is_read() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().never();
    repo.expect_record_audit().never();
    let err = service(repo, MockPayslipNotifier::new()).bank_file(&actor(9), 1, BankFileParams::default()).await.unwrap_err();
    assert!(matches!(err, Error::Forbidden(_, ref m) if m.contains("employee:read_sensitive")), "{err:?}");
}

#[tokio::test]
async fn a_bank_file_is_for_approved_or_sent_sheets_only() {
    for status in [SheetStatus::Draft, SheetStatus::Calculated] {
        let mut repo = MockPayrollRepo::new();
        repo.expect_get_sheet().returning(move |_, _| Ok(Some(sheet(status))));
        repo.expect_record_audit().never();
        let err =
            service(repo, MockPayslipNotifier::new()).bank_file(&reader_of_sensitive(9), 1, BankFileParams::default()).await.unwrap_err();
        assert!(matches!(err, Error::Conflict(_, ref m) if m.contains(status.as_str())), "{err:?}");
    }
    let err = service(MockPayrollRepo::new(), MockPayslipNotifier::new())
        .bank_file(&reader_of_sensitive(9), 1, BankFileParams { format: Some("xlsx".into()), encoding: None })
        .await
        .unwrap_err();
    assert_eq!(fields(&err), ["format"]);
    let err = service(MockPayrollRepo::new(), MockPayslipNotifier::new())
        .bank_file(&reader_of_sensitive(9), 1, BankFileParams { format: None, encoding: Some("big5".into()) })
        .await
        .unwrap_err();
    assert_eq!(fields(&err), ["encoding"]);
}

#[tokio::test]
async fn a_bank_file_names_every_employee_without_an_account_and_writes_nothing() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    let mut b = paid(item(12, 200), 500);
    b.employee_no = Some("E-200".into());
    repo.expect_sheet_items().returning(move |_| Ok(vec![paid(item(11, 100), 900), b.clone(), paid(item(13, 300), 700)]));
    repo.expect_record_audit().never();
    let mut accounts = MockPayeeAccounts::new();
    // Sheets approved before accounts were kept with the approval: the records are read.
    accounts.expect_approved_accounts().returning(|_, _| Ok(None));
    accounts.expect_bank_accounts().returning(|_, _| Ok(HashMap::from([(100, account("E100", "6222020200112233445"))])));
    let mut writer = MockSheetWriter::new();
    writer.expect_write().never();
    let svc = with_files(repo, MockPayslipNotifier::new(), accounts, writer, MockSheetReader::new());

    let err = svc.bank_file(&reader_of_sensitive(9), 1, BankFileParams::default()).await.unwrap_err();

    assert!(matches!(err, Error::Blocked(..)), "409: {err:?}");
    assert_eq!(fields(&err), ["items[1].bank_account", "items[2].bank_account"]);
    let Error::Blocked(_, errors) = err else { unreachable!() };
    assert!(errors[0].message.starts_with("E200 (E-200) has no bank account"), "{errors:?}");
}

#[tokio::test]
async fn a_bank_file_has_a_line_per_employee_paid_in_gbk_and_is_audited() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Sent))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    // Employee 200 nets nothing: no transfer, and no account needed.
    repo.expect_sheet_items().returning(|_| Ok(vec![paid(item(11, 100), 9_000), paid(item(12, 200), 0), paid(item(13, 300), 1_234)]));
    repo.expect_record_audit()
        .withf(|a| {
            let after = a.after.as_ref().unwrap();
            a.action == "payroll_sheet.bank_file" && after["encoding"] == "gbk" && after["lines"] == 2 && after["total"] == 1_023_400
        })
        .times(1)
        .returning(|_| Ok(()));
    let mut accounts = MockPayeeAccounts::new();
    // Sheets approved before accounts were kept with the approval: the records are read.
    accounts.expect_approved_accounts().returning(|_, _| Ok(None));
    accounts.expect_bank_accounts().withf(|t, ids| *t == TENANT && ids == &[100, 300]).times(1).returning(|_, _| {
        Ok(HashMap::from([(100, account("张三", "6222020200112233445")), (300, account("李四", "6217000010001234567"))]))
    });
    let seen = Arc::new(Mutex::new(vec![]));
    let svc = with_files(repo, MockPayslipNotifier::new(), accounts, capturing_writer(seen.clone()), MockSheetReader::new());

    let file = svc
        .bank_file(&reader_of_sensitive(9), 1, BankFileParams { format: Some("csv".into()), encoding: Some("gbk".into()) })
        .await
        .unwrap();

    assert_eq!((file.file_name.as_str(), file.content_type), ("bank-transfer-2026-03-1.csv", "text/csv; charset=gbk"));
    let (table, format) = seen.lock().unwrap().remove(0);
    assert_eq!(format, OutputFormat::Csv { encoding: TextEncoding::Gbk, bom: false });
    assert_eq!(table.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["户名", "账号", "开户行", "金额", "备注"]);
    assert_eq!(
        table.rows[1],
        [
            Cell::Text("李四".into()),
            Cell::Text("6217000010001234567".into()),
            Cell::Text("中国工商银行北京分行".into()),
            Cell::Money(Money::from_yuan(1_234)),
            Cell::Text("2026-03工资".into()),
        ]
    );
    assert_eq!((table.rows.len(), table.totals), (2, None));
}

#[tokio::test]
async fn a_bank_file_pays_the_accounts_kept_with_the_approval_not_the_records() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![paid(item(11, 100), 9_000)]));
    repo.expect_record_audit().times(1).returning(|_| Ok(()));
    let mut accounts = MockPayeeAccounts::new();
    accounts
        .expect_approved_accounts()
        .withf(|t, s| (*t, *s) == (TENANT, 1))
        .returning(|_, _| Ok(Some(HashMap::from([(100, account("张三", "6222020200112233445"))]))));
    // The record's account (changed since the approval) is never asked for.
    accounts.expect_bank_accounts().never();
    let seen = Arc::new(Mutex::new(vec![]));
    let svc = with_files(repo, MockPayslipNotifier::new(), accounts, capturing_writer(seen.clone()), MockSheetReader::new());

    svc.bank_file(&reader_of_sensitive(9), 1, BankFileParams::default()).await.unwrap();
    let (table, _) = seen.lock().unwrap().remove(0);
    assert_eq!(table.rows[0][1], Cell::Text("6222020200112233445".into()));
}

#[tokio::test]
async fn an_employee_without_an_account_at_approval_is_a_409_saying_so() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![paid(item(11, 100), 9_000)]));
    repo.expect_record_audit().never();
    let mut accounts = MockPayeeAccounts::new();
    accounts.expect_approved_accounts().returning(|_, _| Ok(Some(HashMap::new())));
    accounts.expect_bank_accounts().never();
    let mut writer = MockSheetWriter::new();
    writer.expect_write().never();
    let svc = with_files(repo, MockPayslipNotifier::new(), accounts, writer, MockSheetReader::new());

    let err = svc.bank_file(&reader_of_sensitive(9), 1, BankFileParams::default()).await.unwrap_err();
    assert_eq!(fields(&err), ["items[0].bank_account"]);
    let Error::Blocked(_, errors) = err else { unreachable!() };
    assert!(errors[0].message.contains("had no bank account when the sheet was approved"), "{errors:?}");
}

#[tokio::test]
async fn a_name_gbk_cannot_write_is_a_409_naming_the_item() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_sheet_items().returning(|_| Ok(vec![paid(item(11, 100), 0), paid(item(12, 200), 10)]));
    repo.expect_record_audit().never();
    let mut accounts = MockPayeeAccounts::new();
    // Sheets approved before accounts were kept with the approval: the records are read.
    accounts.expect_approved_accounts().returning(|_, _| Ok(None));
    accounts.expect_bank_accounts().returning(|_, _| Ok(HashMap::from([(200, account("王𬌗", "6222"))])));
    let mut writer = MockSheetWriter::new();
    writer.expect_write().returning(|_, _| Err(WriteError::Unencodable { row: Some(0), column: 0 }));
    let svc = with_files(repo, MockPayslipNotifier::new(), accounts, writer, MockSheetReader::new());

    let err = svc.bank_file(&reader_of_sensitive(9), 1, BankFileParams { format: None, encoding: Some("gbk".into()) }).await.unwrap_err();

    // Line 0 of the file is the sheet's item 1 (item 0 pays nothing).
    assert!(matches!(err, Error::Blocked(..)), "{err:?}");
    assert_eq!(fields(&err), ["items[1].employee_name"]);
}

#[tokio::test]
async fn the_template_is_the_header_row_of_the_import_columns() {
    let seen = Arc::new(Mutex::new(vec![]));
    let svc = with_files(
        MockPayrollRepo::new(),
        MockPayslipNotifier::new(),
        MockPayeeAccounts::new(),
        capturing_writer(seen.clone()),
        MockSheetReader::new(),
    );
    let file = svc.import_template(TemplateParams::default()).await.unwrap();
    assert_eq!(file.file_name, "payroll-import-template.xlsx");
    let (table, _) = seen.lock().unwrap().remove(0);
    assert_eq!(table.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), crate::files::IMPORT_COLUMNS);
    assert!(table.rows.is_empty());
}

/// A draft sheet with E100 (number A1) and E200 (A2); the tenant also has E300 (A3).
fn import_repo(status: SheetStatus) -> MockPayrollRepo {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(move |_, _| Ok(Some(sheet(status))));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employee_count().returning(|_| Ok(3));
    repo.expect_employees_by_no().returning(|_, numbers| {
        let all = [numbered(employee(100), "A1", "张三"), numbered(employee(200), "A2", "李四"), numbered(employee(300), "A3", "王五")];
        Ok(all.into_iter().filter(|e| e.employee_no.as_ref().is_some_and(|n| numbers.contains(n))).collect())
    });
    let mut calculated = paid(item(11, 100), 100);
    calculated.adjustments.allowance = Money::from_yuan(5);
    repo.expect_sheet_items().returning(move |_| Ok(vec![calculated.clone(), paid(item(12, 200), 100)]));
    repo
}

#[tokio::test]
async fn an_import_replaces_the_rows_employees_inputs_adds_new_ones_and_goes_back_to_draft() {
    let mut repo = import_repo(SheetStatus::Calculated);
    repo.expect_update_sheet()
        .withf(|s, items, effects| {
            let ItemsWrite::Replace(items) = items else { return false };
            let by = |id: Id| items.iter().find(|i| i.employee_id == id).unwrap();
            s.status == SheetStatus::Draft
                && s.calculated_at.is_none()
                && s.ytd_basis.is_none()
                && s.totals.employees == 3
                && s.totals.net_pay == Money::ZERO
                && items.len() == 3
                && items.iter().all(|i| i.line.is_none())
                // Replaced whole: the allowance the file leaves out is 0 now.
                && by(100).adjustments == Adjustments { bonus: Money::from_fen(100_050), ..Adjustments::default() }
                // Not in the file: kept as it was.
                && by(200).adjustments == Adjustments::default()
                && by(300).adjustments.overtime == Money::from_yuan(20)
                && by(300).employee_name == "王五"
                && effects.audit.as_ref().is_some_and(|audit| {
                    audit.action == "payroll_sheet.import"
                        && audit.after.as_ref().is_some_and(|a| a["import"]["replaced"] == 1 && a["import"]["added"] == 1 && a["status"] == "draft")
                })
        })
        .times(1)
        .returning(|s, _, _| Ok(s));
    let reader = {
        let mut reader = MockSheetReader::new();
        let sheet =
            read_sheet(&[&["employee_no", "employee_name", "bonus", "overtime"], &["A1", "张三", "1,000.50", ""], &["A3", "", "", "20"]]);
        // The row limit is the tenant's employees, plus the header.
        reader
            .expect_read()
            .withf(|bytes, limits| bytes == b"file" && limits.max_rows == 4)
            .times(1)
            .returning(move |_, _| Ok(sheet.clone()));
        reader
    };
    let svc = with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), MockSheetWriter::new(), reader);

    svc.import(&actor(9), 1, b"file".to_vec()).await.unwrap();
}

#[tokio::test]
async fn an_import_into_an_approved_sheet_is_a_conflict_and_reads_no_file() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(sheet(SheetStatus::Approved))));
    repo.expect_update_sheet().never();
    let mut reader = MockSheetReader::new();
    reader.expect_read().never();
    let svc = with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), MockSheetWriter::new(), reader);
    let err = svc.import(&actor(9), 1, b"file".to_vec()).await.unwrap_err();
    assert!(matches!(err, Error::Conflict(..)), "{err:?}");
}

#[tokio::test]
async fn an_import_lists_every_error_by_row_and_column_and_changes_nothing() {
    // (what the reader answers, the fields the 400 names)
    let cases: Vec<(Result<ReadSheet, ReadError>, Vec<&str>)> = vec![
        (Err(ReadError::Empty), vec!["file"]),
        (Err(ReadError::NotSpreadsheet("a PDF document".into())), vec!["file"]),
        (Err(ReadError::TooManyRows), vec!["file"]),
        (Ok(read_sheet(&[&["employee", "bonus"], &["A1", "1"]])), vec!["columns.employee", "columns.employee_no"]),
        (Ok(read_sheet(&[&["employee_no", "bonus", "tip"], &["A1", "1", "2"]])), vec!["columns.tip"]),
        // Unknown numbers and a name that is not the employee's.
        (
            Ok(read_sheet(&[&["employee_no", "employee_name"], &["A9", ""], &["A2", "张三"], &["A1", "张三"]])),
            vec!["rows[2].employee_no", "rows[3].employee_name"],
        ),
        // Every error at once: a bad cell, and an unknown number on another row.
        (Ok(read_sheet(&[&["employee_no", "bonus"], &["A1", "1.005"], &["A9", "1"]])), vec!["rows[2].bonus", "rows[3].employee_no"]),
        (Ok(read_sheet(&[&["employee_no", "bonus"], &["A1", "1"], &["A1", "2"]])), vec!["rows[3].employee_no"]),
        (Ok(read_sheet(&[&["employee_no", "bonus"], &["A1", "1.005"], &["A2", "-1"]])), vec!["rows[2].bonus", "rows[3].bonus"]),
        (Ok(read_sheet(&[&["employee_no"], &["A1"], &["A2"], &["A3"], &["A4"]])), vec!["file"]),
    ];
    for (answer, expected) in cases {
        let mut repo = import_repo(SheetStatus::Draft);
        repo.expect_update_sheet().never();
        let mut reader = MockSheetReader::new();
        reader.expect_read().times(1).return_once(move |_, _| answer);
        let svc = with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), MockSheetWriter::new(), reader);
        let err = svc.import(&actor(9), 1, b"file".to_vec()).await.unwrap_err();
        assert!(matches!(err, Error::Invalid(_)), "400: {err:?}");
        assert_eq!(fields(&err), expected, "{err:?}");
    }
}

#[tokio::test]
async fn a_supplementary_sheet_refuses_an_imported_leave_deduction() {
    let mut repo = MockPayrollRepo::new();
    repo.expect_get_sheet().returning(|_, _| Ok(Some(Sheet { kind: SheetKind::Supplementary, ..sheet(SheetStatus::Draft) })));
    repo.expect_tenant().returning(|_, _| Ok(Some(tenant(true))));
    repo.expect_employee_count().returning(|_| Ok(3));
    // Both numbers are the tenant's employees: the leave deduction is the one error.
    repo.expect_employees_by_no().returning(|_, _| Ok(vec![numbered(employee(100), "A1", "张三"), numbered(employee(200), "A2", "李四")]));
    repo.expect_update_sheet().never();
    let reader = reader_answering(read_sheet(&[&["employee_no", "leave_deduction"], &["A1", "0"], &["A2", "100"]]));
    let svc = with_files(repo, MockPayslipNotifier::new(), MockPayeeAccounts::new(), MockSheetWriter::new(), reader);
    let err = svc.import(&actor(9), 1, b"file".to_vec()).await.unwrap_err();
    assert_eq!(fields(&err), ["rows[3].leave_deduction"]);
}
