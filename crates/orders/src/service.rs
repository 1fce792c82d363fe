//! The orders use cases: [`OrderService`].
mod orders;

pub use orders::{EventOutcome, OrderService};

#[cfg(test)]
mod tests;
