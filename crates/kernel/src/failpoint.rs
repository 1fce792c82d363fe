//! Failpoints between the steps that move money (stored → asked of the platform → its answer
//! recorded → the order told), for the fault tests.

/// The failpoint `$name`, behind the *calling* crate's `failpoints` feature (which must also
/// turn on `fail/failpoints`): set to `return`, it ends the enclosing function with
/// `Err(Unavailable)` (a 503), as a database gone at that step would; `pause` or `sleep` stop
/// there. Without the feature it compiles to nothing.
#[macro_export]
macro_rules! failpoint {
    ($name:literal) => {
        #[cfg(feature = "failpoints")]
        fail::fail_point!($name, |_| Err($crate::Error::Unavailable {
            message: format!("failpoint {} fired", $name),
            retry_after_secs: 1
        }));
    };
}
