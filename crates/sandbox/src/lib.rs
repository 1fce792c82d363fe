//! A local stand-in for the messaging platform (WeChat), its pay platform and SMS / e-mail
//! delivery. It answers the same wire format as the real services, so `atrium-wechat` runs
//! its real client code against it, in tests and in the embedded default.
//!
//! Mount it with [`Sandbox::configure`] under a prefix (the server uses `/sandbox`). The
//! platform API lives under `{prefix}/api` (website login's `/sns/oauth2/access_token`, the
//! mini-program's `/cgi-bin/token` and `/cgi-bin/message/subscribe/send`). Besides the
//! platform's own routes it offers control calls that play the other side:
//!
//! * `POST {prefix}/control/scan` — "a user scanned the QR code": body
//!   `{"qr_url": "...", "openid": "...", "unionid": "..."?, "follow": true?}`. The sandbox
//!   issues an authorisation code and, like the user's browser, calls the page's
//!   `redirect_uri?code=…&state=…` (unless `follow` is false). Answers
//!   `{"code", "redirect_url", "callback_status", "callback_body"}`.
//! * `POST {prefix}/control/subscriptions` — `{"openid": "...", "remaining": 0}`: how many
//!   subscribe messages that user still accepts (0 → the next send gets 43101; `null` →
//!   unlimited, the default).
//! * `POST {prefix}/control/fail` — `{"path": "/cgi-bin/message/subscribe/send", "errcode": -1,
//!   "times": 1}`: the next `times` calls to that platform path answer `errcode` (paths:
//!   [`INJECTABLE_PATHS`]).
//! * `POST {prefix}/control/expire-tokens` — every access token issued so far expires now, so
//!   the next business call gets 42001.
//! * `GET {prefix}/messages?touser=…` — subscribe messages accepted, newest last.
//! * `GET {prefix}/outbox?target=…` — codes and texts "delivered" by SMS or e-mail, newest last.
//!
//! Each control call has a Rust twin on [`Sandbox`] for in-process tests.

mod mp;
mod outbox;
mod pay;
mod platform;

pub use mp::{INJECTABLE_PATHS, SubscribeRecord, TemplateValue};
pub use outbox::{OutboxMessage, SandboxOutbox};
pub use pay::{
    HOLD_DUPLICATE, MAX_REFUNDS_PER_ORDER, NotifyAttempt, PayNotification, PaymentResult, RefundResult, SandboxMerchant, SettleReport,
};
pub use platform::Sandbox;

/// The website-login app the sandbox knows by default.
pub const SANDBOX_LOGIN_APPID: &str = "wx_sandbox_login";
/// The secret of [`SANDBOX_LOGIN_APPID`].
pub const SANDBOX_LOGIN_SECRET: &str = "sandbox-login-secret";

/// The mini-program app the sandbox knows by default (access tokens, subscribe messages).
pub const SANDBOX_MP_APPID: &str = "wx_sandbox_mp";
/// The secret of [`SANDBOX_MP_APPID`].
pub const SANDBOX_MP_SECRET: &str = "sandbox-mp-secret";
/// The one subscribe-message template id the sandbox accepts (others get 40037): the pay-slip
/// template, with keys `thing*` (at most 20 characters) and `amount*` (digits, optional
/// decimals) checked like the platform does.
pub const SANDBOX_PAYSLIP_TEMPLATE_ID: &str = "sandbox-payslip-template";
