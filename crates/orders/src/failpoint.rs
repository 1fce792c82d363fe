//! Failpoints in the orders' part of paying and refunding (the sync that tells an order what
//! the ledger did), for the fault tests: with the `failpoints` feature, a test can make the
//! step fail as a database gone at that moment would (`return`), or stop there (`pause`,
//! `sleep`). Without the feature they compile to nothing.

/// The failpoint `$name`: set to `return`, it ends the enclosing function with
/// `Err(Unavailable)` (a 503), as a database gone at that step would.
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        fail::fail_point!($name, |_| Err(atrium_kernel::Error::Unavailable {
            message: format!("failpoint {} fired", $name),
            retry_after_secs: 1
        }));
    };
}

pub(crate) use failpoint;
