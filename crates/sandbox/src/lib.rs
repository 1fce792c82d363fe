//! A local stand-in for the messaging platform (WeChat), its pay platform and SMS / e-mail
//! delivery. It answers the same wire format as the real services, so `atrium-wechat` runs
//! its real client code against it, in tests and in the embedded default.
//!
//! Mount it with [`Sandbox::configure`] under a prefix (the server uses `/sandbox`). Besides
//! the platform's own routes it offers control calls that play the other side:
//!
//! * `POST {prefix}/control/scan` — "a user scanned the QR code": body
//!   `{"qr_url": "...", "openid": "...", "unionid": "..."?, "follow": true?}`. The sandbox
//!   issues an authorisation code and, like the user's browser, calls the page's
//!   `redirect_uri?code=…&state=…` (unless `follow` is false). Answers
//!   `{"code", "redirect_url", "callback_status", "callback_body"}`.
//! * `GET {prefix}/outbox?target=…` — codes "delivered" by SMS or e-mail, newest last.

mod outbox;
mod platform;

pub use outbox::{OutboxMessage, SandboxOutbox};
pub use platform::Sandbox;

/// The website-login app the sandbox knows by default.
pub const SANDBOX_LOGIN_APPID: &str = "wx_sandbox_login";
pub const SANDBOX_LOGIN_SECRET: &str = "sandbox-login-secret";
