//! What the orders domain stores and reasons about, one file per resource.
mod orders;

pub use orders::*;
