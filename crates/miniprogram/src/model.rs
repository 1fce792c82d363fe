//! What the mini-program domain stores and reasons about, one file per resource.
mod payments;
mod releases;

pub use payments::*;
pub use releases::*;
