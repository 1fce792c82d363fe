//! The mini-program use cases, one service per resource: [`PaymentService`] for now.
mod payments;

pub use payments::{PaymentService, platform_error};

#[cfg(test)]
mod tests;
