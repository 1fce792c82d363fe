//! What clients send and receive, one file per resource.
mod payments;

pub use payments::*;
