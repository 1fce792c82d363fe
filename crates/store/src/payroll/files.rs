//! What payroll's spreadsheet files read beyond sheets and items: a tenant's employees by
//! their numbers (an import's rows), how many it has (an import's row limit), and their bank
//! accounts, decrypted (the bank file).
use super::{EmployeeRow, employee_from_row};
use crate::crypto::FieldCipher;
use crate::db::{Db, DbConn};
use crate::error::db_error;
use crate::schema::{employees, payroll_sheet_accounts, payroll_sheets};
use async_trait::async_trait;
use atrium_kernel::{Id, Result};
use atrium_payroll::{PayeeAccount, PayeeAccounts, PayrollEmployee};
use diesel::prelude::*;
use std::collections::HashMap;

/// Values per `IN (…)` list: well under both backends' bind-parameter limits.
const CHUNK: usize = 500;

pub(super) fn employee_count(conn: &mut DbConn, tenant_id: Id) -> Result<i64> {
    employees::table.filter(employees::tenant_id.eq(tenant_id)).count().get_result(conn).map_err(db_error)
}

pub(super) fn employees_by_no(conn: &mut DbConn, tenant_id: Id, numbers: &[String]) -> Result<Vec<PayrollEmployee>> {
    let mut rows: Vec<EmployeeRow> = Vec::with_capacity(numbers.len());
    for chunk in numbers.chunks(CHUNK) {
        rows.extend(
            employees::table
                .filter(employees::tenant_id.eq(tenant_id))
                .filter(employees::employee_no.eq_any(chunk))
                .select(EmployeeRow::as_select())
                .load::<EmployeeRow>(conn)
                .map_err(db_error)?,
        );
    }
    rows.into_iter().map(employee_from_row).collect()
}

/// Employees' bank accounts over the database, decrypted with the field cipher.
pub(super) struct AccountsStore {
    pub db: Db,
    pub cipher: FieldCipher,
}

#[async_trait]
impl PayeeAccounts for AccountsStore {
    async fn bank_accounts(&self, tenant_id: Id, employee_ids: Vec<Id>) -> Result<HashMap<Id, PayeeAccount>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let mut accounts = HashMap::with_capacity(employee_ids.len());
                for chunk in employee_ids.chunks(CHUNK) {
                    let rows: Vec<(Id, String, Option<String>, Option<String>)> = employees::table
                        .filter(employees::tenant_id.eq(tenant_id))
                        .filter(employees::id.eq_any(chunk))
                        .filter(employees::bank_account_enc.is_not_null())
                        .select((employees::id, employees::name, employees::bank_name, employees::bank_account_enc))
                        .load(conn)
                        .map_err(db_error)?;
                    for (id, name, bank_name, enc) in rows {
                        let Some(enc) = enc else { continue };
                        let account_no = cipher.decrypt(&enc)?;
                        accounts.insert(id, PayeeAccount { name, bank_name, account_no });
                    }
                }
                Ok(accounts)
            })
            .await
    }

    async fn approved_accounts(&self, tenant_id: Id, sheet_id: Id) -> Result<Option<HashMap<Id, PayeeAccount>>> {
        let cipher = self.cipher.clone();
        self.db
            .run(move |conn| {
                let kept: Option<bool> = payroll_sheets::table
                    .filter(payroll_sheets::id.eq(sheet_id))
                    .filter(payroll_sheets::tenant_id.eq(tenant_id))
                    .select(payroll_sheets::accounts_kept)
                    .first(conn)
                    .optional()
                    .map_err(db_error)?;
                if kept != Some(true) {
                    return Ok(None);
                }
                let rows: Vec<(Id, String, Option<String>, String)> = payroll_sheet_accounts::table
                    .filter(payroll_sheet_accounts::sheet_id.eq(sheet_id))
                    .select((
                        payroll_sheet_accounts::employee_id,
                        payroll_sheet_accounts::name,
                        payroll_sheet_accounts::bank_name,
                        payroll_sheet_accounts::bank_account_enc,
                    ))
                    .load(conn)
                    .map_err(db_error)?;
                let mut accounts = HashMap::with_capacity(rows.len());
                for (id, name, bank_name, enc) in rows {
                    accounts.insert(id, PayeeAccount { name, bank_name, account_no: cipher.decrypt(&enc)? });
                }
                Ok(Some(accounts))
            })
            .await
    }
}
