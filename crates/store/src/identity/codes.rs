//! [`CodeRepo`]: one-time verification codes.
use super::IdentityStore;
use crate::error::db_error;
use crate::schema::verification_codes;
use crate::time::{from_db, to_db};
use async_trait::async_trait;
use atrium_identity::{CodePurpose, CodeRecord, CodeRepo, NewCode};
use atrium_kernel::StrEnum;
use atrium_kernel::{Error, Id, Result, Timestamp};
use chrono::NaiveDateTime;
use diesel::prelude::*;

fn purpose_from_db(s: &str) -> Result<CodePurpose> {
    CodePurpose::parse(s).ok_or_else(|| Error::internal(format!("unknown code purpose {s}")))
}

#[async_trait]
impl CodeRepo for IdentityStore {
    async fn insert_code(&self, code: NewCode) -> Result<()> {
        self.db
            .write(move |conn| {
                diesel::insert_into(verification_codes::table)
                    .values((
                        verification_codes::target.eq(&code.target),
                        verification_codes::purpose.eq(code.purpose.as_str()),
                        verification_codes::code_hash.eq(&code.code_hash),
                        verification_codes::created_at.eq(to_db(code.created_at)),
                        verification_codes::expires_at.eq(to_db(code.expires_at)),
                        verification_codes::ip.eq(&code.ip),
                    ))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(())
            })
            .await
    }

    async fn latest_code(&self, target: &str, purpose: CodePurpose) -> Result<Option<CodeRecord>> {
        let target = target.to_owned();
        self.db
            .run(move |conn| {
                let row: Option<(i64, String, String, String, i32, NaiveDateTime, NaiveDateTime, Option<NaiveDateTime>)> =
                    verification_codes::table
                        .filter(verification_codes::target.eq(&target))
                        .filter(verification_codes::purpose.eq(purpose.as_str()))
                        .order(verification_codes::id.desc())
                        .select((
                            verification_codes::id,
                            verification_codes::target,
                            verification_codes::purpose,
                            verification_codes::code_hash,
                            verification_codes::attempts,
                            verification_codes::created_at,
                            verification_codes::expires_at,
                            verification_codes::consumed_at,
                        ))
                        .first(conn)
                        .optional()
                        .map_err(db_error)?;
                row.map(|r| {
                    Ok(CodeRecord {
                        id: r.0,
                        target: r.1,
                        purpose: purpose_from_db(&r.2)?,
                        code_hash: r.3,
                        attempts: r.4,
                        created_at: from_db(r.5),
                        expires_at: from_db(r.6),
                        consumed_at: r.7.map(from_db),
                    })
                })
                .transpose()
            })
            .await
    }

    async fn record_code_attempt(&self, code_id: Id, max_attempts: i32, at: Timestamp) -> Result<()> {
        self.db
            .write(move |conn| {
                let attempts: i32 =
                    verification_codes::table.find(code_id).select(verification_codes::attempts).first(conn).map_err(db_error)?;
                let target = verification_codes::table.find(code_id);
                if attempts + 1 >= max_attempts {
                    diesel::update(target)
                        .set((verification_codes::attempts.eq(attempts + 1), verification_codes::consumed_at.eq(Some(to_db(at)))))
                        .execute(conn)
                        .map_err(db_error)?;
                } else {
                    diesel::update(target).set(verification_codes::attempts.eq(attempts + 1)).execute(conn).map_err(db_error)?;
                }
                Ok(())
            })
            .await
    }

    async fn consume_code(&self, code_id: Id, at: Timestamp) -> Result<bool> {
        self.db
            .write(move |conn| {
                let n = diesel::update(verification_codes::table.find(code_id).filter(verification_codes::consumed_at.is_null()))
                    .set(verification_codes::consumed_at.eq(Some(to_db(at))))
                    .execute(conn)
                    .map_err(db_error)?;
                Ok(n == 1)
            })
            .await
    }
}
