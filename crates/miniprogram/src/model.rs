//! What the mini-program domain stores and reasons about, one file per resource.
mod payments;

pub use payments::*;
