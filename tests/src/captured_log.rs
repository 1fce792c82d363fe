//! Every log line of this test process, kept for a test to read afterwards: the in-process
//! server's access log, our own lines and the libraries', at debug level (what an operator
//! turns on to look into a problem). `keep` installs the logger once per process.
use std::sync::{Mutex, OnceLock};

/// One kept line.
#[derive(Debug, Clone)]
pub struct Line {
    pub level: log::Level,
    pub target: String,
    pub message: String,
}

static LINES: Mutex<Vec<Line>> = Mutex::new(Vec::new());

struct KeepAll;

impl log::Log for KeepAll {
    fn enabled(&self, metadata: &log::Metadata) -> bool {
        metadata.level() <= log::Level::Debug
    }

    fn log(&self, record: &log::Record) {
        if self.enabled(record.metadata()) {
            let line = Line { level: record.level(), target: record.target().to_owned(), message: record.args().to_string() };
            LINES.lock().unwrap_or_else(|p| p.into_inner()).push(line);
        }
    }

    fn flush(&self) {}
}

/// Starts keeping every line from now on (once per process; later calls do nothing).
///
/// # Panics
/// When another logger was installed first: the lines would go there.
pub fn keep() {
    static ONCE: OnceLock<()> = OnceLock::new();
    ONCE.get_or_init(|| {
        log::set_boxed_logger(Box::new(KeepAll)).expect("no other logger is installed in this test process");
        log::set_max_level(log::LevelFilter::Debug);
    });
}

/// The lines kept so far.
pub fn lines() -> Vec<Line> {
    LINES.lock().unwrap_or_else(|p| p.into_inner()).clone()
}

/// The lines kept so far as one text, a line each: `LEVEL target message`.
pub fn text() -> String {
    lines().iter().map(|l| format!("{} {} {}\n", l.level, l.target, l.message)).collect()
}
