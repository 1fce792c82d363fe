//! The WeChat adapters' tests, one binary: the HTTP clients against stubs and against the
//! sandbox, the signing and encryption vectors, and the uploader. One binary builds and links
//! the shared code once, where a binary per file did it eight times.
mod ci_uploader;
mod open_client;
mod open_sandbox;
mod open_vectors;
mod pay_client;
mod pay_sandbox;
mod pay_vectors;
mod subscribe;
