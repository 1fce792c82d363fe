use chrono::Duration;

/// Tunables of the identity service. `Default` gives the documented defaults (docs/security.md).
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    /// HS256 key for access tokens; at least 32 bytes.
    pub jwt_secret: Vec<u8>,
    /// The `iss` of access tokens, checked on every request (default `atrium`).
    pub issuer: String,
    /// The `aud` of access tokens, checked on every request (default `atrium-api`).
    pub audience: String,
    /// How long an access token is good for (default 2 hours).
    pub access_ttl: Duration,
    /// How long a refresh token is good for (default 7 days); each refresh issues a new one.
    pub refresh_ttl: Duration,
    /// Absolute lifetime of a session, however often it is refreshed.
    pub session_max_age: Duration,
    /// How long a verification code is good for (default 5 minutes).
    pub code_ttl: Duration,
    /// How long before another code may go to the same target (default 60 seconds).
    pub code_resend_after: Duration,
    /// Wrong guesses that burn a code (default 5).
    pub code_max_attempts: i32,
    /// Codes sent to one phone or address per hour at most (default 5).
    pub codes_per_target_per_hour: i64,
    /// Codes requested from one client address per hour at most (default 30).
    pub codes_per_ip_per_hour: i64,
    /// Consecutive failed logins that lock a login identifier (default 5).
    pub lockout_threshold: i32,
    /// How long a locked identifier stays locked (default 15 minutes).
    pub lockout_duration: Duration,
    /// Failed logins from one client address per hour before it is refused (default 100).
    pub failed_logins_per_ip_per_hour: i64,
    /// Return the code in `send-code` responses (the `dev` profile only).
    pub expose_debug_codes: bool,
    /// How long a QR login ticket is good for (default 5 minutes).
    pub qr_ticket_ttl: Duration,
    /// Absolute URL the messaging platform redirects a scanner to (our callback route).
    pub qr_callback_url: String,
    /// How long an authenticated principal may be served from the in-process cache.
    /// Revocations on another instance take effect within this time.
    pub principal_cache_ttl: std::time::Duration,
}

impl Default for IdentityConfig {
    fn default() -> Self {
        IdentityConfig {
            jwt_secret: Vec::new(),
            issuer: "atrium".into(),
            audience: "atrium-api".into(),
            access_ttl: Duration::hours(2),
            refresh_ttl: Duration::days(7),
            session_max_age: Duration::days(30),
            code_ttl: Duration::minutes(5),
            code_resend_after: Duration::seconds(60),
            code_max_attempts: 5,
            codes_per_target_per_hour: 5,
            codes_per_ip_per_hour: 30,
            lockout_threshold: 5,
            lockout_duration: Duration::minutes(15),
            failed_logins_per_ip_per_hour: 100,
            expose_debug_codes: false,
            qr_ticket_ttl: Duration::minutes(5),
            qr_callback_url: "http://127.0.0.1:8080/api/v1/auth/chat-qr/callback".into(),
            principal_cache_ttl: std::time::Duration::from_millis(500),
        }
    }
}
