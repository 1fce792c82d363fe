//! What clients send and receive, one file per resource.
mod payments;
mod releases;

pub use payments::*;
pub use releases::*;
