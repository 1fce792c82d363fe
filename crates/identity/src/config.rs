use chrono::Duration;

/// Tunables of the identity service. `Default` gives the documented defaults (docs/security.md).
#[derive(Debug, Clone)]
pub struct IdentityConfig {
    /// HS256 key for access tokens; at least 32 bytes.
    pub jwt_secret: Vec<u8>,
    pub issuer: String,
    pub audience: String,
    pub access_ttl: Duration,
    pub refresh_ttl: Duration,
    /// Absolute lifetime of a session, however often it is refreshed.
    pub session_max_age: Duration,
    pub code_ttl: Duration,
    pub code_resend_after: Duration,
    pub code_max_attempts: i32,
    pub codes_per_target_per_hour: i64,
    pub codes_per_ip_per_hour: i64,
    pub lockout_threshold: i32,
    pub lockout_duration: Duration,
    pub failed_logins_per_ip_per_hour: i64,
    /// Return the code in `send-code` responses (the `dev` profile only).
    pub expose_debug_codes: bool,
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
