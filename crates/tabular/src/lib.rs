//! Spreadsheet files for the payroll domain: [`Tabular`] implements its ports
//! [`SheetWriter`] (a table as xlsx or csv bytes) and [`SheetReader`] (xlsx or csv bytes as
//! rows of text cells) with well-kept crates — rust_xlsxwriter writes xlsx, calamine reads it,
//! the csv crate does csv, encoding_rs GBK.
//!
//! - `write`: xlsx with a bold, frozen header, money columns as numbers formatted `0.00`,
//!   text columns formatted as text; csv with CRLF line ends, UTF-8 (optionally with a byte
//!   order mark) or GBK, a cell GBK cannot write reported by its row and column, and text a
//!   spreadsheet would run as a formula defused with a leading `'`.
//! - `read`: the content decides the format (a zip that holds `xl/workbook.xml` is xlsx; known
//!   binary formats are named and refused; anything else is csv, UTF-8 or else GBK); an xlsx's
//!   declared unpacked size is checked before anything is unpacked
//!   ([`read::MAX_UNPACKED_BYTES`]); reading stops at the caller's row and column limits.
//!
//! Encoding and decoding 10,000 rows takes tens of milliseconds of CPU: both run on tokio's
//! blocking pool, never on the caller's async thread, and at most `concurrency` of them at
//! once (what a burst of downloads can hold in memory is bounded).
pub mod read;
mod write;

/// Encodes `table` as `format`, on the calling thread (for benches and tools: services go
/// through [`SheetWriter`], which runs this on the blocking pool).
pub fn encode(table: &Table, format: OutputFormat) -> Result<Vec<u8>, WriteError> {
    write::write(table, format)
}

/// Decodes an xlsx or csv file, on the calling thread (for benches and tools: services go
/// through [`SheetReader`], which runs this on the blocking pool).
pub fn decode(bytes: &[u8], limits: ReadLimits) -> Result<ReadSheet, ReadError> {
    read::read(bytes, limits)
}

use async_trait::async_trait;
use atrium_payroll::files::{OutputFormat, ReadError, ReadLimits, ReadSheet, Table, WriteError};
use atrium_payroll::{SheetReader, SheetWriter};
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The xlsx and csv adapter of the payroll domain's file ports.
#[derive(Clone)]
pub struct Tabular {
    permits: Arc<Semaphore>,
}

impl Tabular {
    /// An adapter running at most `concurrency` (at least 1) encodes and decodes at once.
    pub fn new(concurrency: usize) -> Self {
        Tabular { permits: Arc::new(Semaphore::new(concurrency.max(1))) }
    }

    /// As many at once as the machine has cores.
    pub fn per_core() -> Self {
        Tabular::new(std::thread::available_parallelism().map_or(2, usize::from))
    }

    /// Runs `work` on the blocking pool once a permit is free.
    async fn off_thread<T: Send + 'static>(&self, work: impl FnOnce() -> T + Send + 'static) -> Result<T, String> {
        let _permit = self.permits.acquire().await.map_err(|e| e.to_string())?;
        tokio::task::spawn_blocking(work).await.map_err(|e| e.to_string())
    }
}

#[async_trait]
impl SheetWriter for Tabular {
    async fn write(&self, table: Table, format: OutputFormat) -> Result<Vec<u8>, WriteError> {
        self.off_thread(move || write::write(&table, format))
            .await
            .map_err(|e| WriteError::Failed(format!("the encoding task failed: {e}")))?
    }
}

#[async_trait]
impl SheetReader for Tabular {
    async fn read(&self, bytes: Vec<u8>, limits: ReadLimits) -> Result<ReadSheet, ReadError> {
        match self.off_thread(move || read::read(&bytes, limits)).await {
            Ok(result) => result,
            Err(e) => {
                log::error!("the decoding task of an imported file failed: {e}");
                Err(ReadError::Unreadable("the file could not be read".to_owned()))
            }
        }
    }
}

#[cfg(test)]
mod tests;
