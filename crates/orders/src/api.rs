//! What clients send and receive, one file per resource.
mod orders;

pub use orders::*;
