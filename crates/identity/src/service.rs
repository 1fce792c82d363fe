//! Identity's use cases: [`IdentityService`] (logins, sessions, codes, registration, QR login),
//! [`UserService`] and [`RoleService`] (the administration of users and roles), sharing one
//! [`SessionCache`] so a change to a user or role is seen by this instance's next request.
mod auth;
mod cache;
mod roles;
mod users;

pub use auth::IdentityService;
pub use cache::SessionCache;
pub use roles::RoleService;
pub use users::{USER_CREATES_PER_HOUR, UserService};

#[cfg(test)]
mod tests;
