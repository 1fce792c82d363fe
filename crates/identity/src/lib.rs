//! Identity: who a caller is and what it may do.
//!
//! Owns the workspace's users, roles and permissions — other domains reach users only through
//! identity: password, code and QR logins; sessions with short-lived JWT access tokens and
//! rotating refresh tokens; verification codes; lockout and rate limits; and the
//! administration of users and roles ([`UserService`], [`RoleService`]). Every piece of
//! security state lives behind a port, so several server instances sharing one database
//! behave as one.
//!
//! Ports ([`ports`] holds them all): storage is split by concern —
//! [`LoginRepo`] (accounts by login identifier, failure counts and locks), [`RateBucketRepo`]
//! (sliding-window counters), [`SessionRepo`] (sessions and refresh tokens), [`CodeRepo`]
//! (verification codes), [`AccountRepo`] (registration, password reset, platform-admin
//! bootstrap) and [`ChatTicketRepo`] (QR tickets and bound platform identities) — and
//! [`IdentityRepo`] is all of them at once, the one storage handle [`IdentityService`] takes;
//! [`UserRepo`] and [`RoleRepo`] store the administration's users and roles. Beside storage:
//! [`PasswordHasher`] (slow hashing off the request threads), [`CodeSender`] (SMS / e-mail
//! delivery) and [`ChatLoginProvider`] (the messaging platform's QR login).
//!
//! Request and response types are in [`api`] (with the `openapi` feature, their schemas);
//! the `mock` feature gives mockall doubles of every port.

#![warn(missing_docs)]

pub mod api;
mod config;
mod model;
mod password;
/// The identity ports: storage by concern, password hashing, code delivery and the QR login
/// provider, each mockable with the `mock` feature.
pub mod ports;
mod service;
mod token;

pub use api::{ManagedUserView, NewRole, NewUser, RolePatch, UserPatch};
pub use config::IdentityConfig;
pub use model::*;
pub use password::{Password, validate_password};
pub use ports::*;
pub use service::{IdentityService, RoleService, SessionCache, USER_CREATES_PER_HOUR, UserService};
pub use token::{AccessClaims, hash_secret, random_token};
