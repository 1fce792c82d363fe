//! Service tests against mocked ports, one file per service.
mod payments;
mod releases;
