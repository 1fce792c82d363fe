//! Documents: projects (document collections), Markdown documents in a tree, and the API
//! tokens that the document interface (`/api/docs/`) authenticates with.
//!
//! Every project and token belongs to one party (the platform, a partner or a tenant) — its
//! [`Owner`]. A token reaches only projects of its own owner, and, when it is limited, only
//! the listed ones. Token values are random (32 CSPRNG bytes), shown once when issued and
//! stored only as a SHA-256 hash.
//!
//! `model` holds what the domain stores, `api` what clients send and receive (request
//! bodies, parameters, and views converted from the model). Port: [`DocsRepo`] (storage).
//! Time comes from the kernel's `Clock`.
//!
//! Features: `mock` for a mockall double of the port (`MockDocsRepo`); `openapi` for the
//! schemas of the request and view types.

#![warn(missing_docs)]

mod api;
mod config;
mod model;
mod ports;
mod service;
mod token;
mod tree;

pub use api::*;
pub use config::DocsConfig;
pub use model::*;
pub use ports::*;
pub use service::DocsService;
pub use token::{TOKEN_PREFIX, hash_token};
pub use tree::build_tree;
