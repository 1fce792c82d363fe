//! The mini-program domain's settings: code releases.

/// How code releases behave. The server fills it from configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseSettings {
    /// The server's public base URL (`ATRIUM_PUBLIC_URL`); the authorisation page redirects
    /// back under it.
    pub public_url: String,
    /// What an uploaded package may be.
    pub package_limits: crate::package::PackageLimits,
    /// A job asks the platform about an audit still running this long after it was submitted
    /// (and again after as long), so a lost event costs time, not correctness.
    pub audit_poll_after: chrono::Duration,
    /// An authorisation link (its state and pre-auth code) is good for this long at most.
    pub authorize_link_ttl: chrono::Duration,
    /// An upload job gives up after this many attempts when the platform or the uploader is
    /// unavailable.
    pub upload_attempts: u32,
    /// What each tenant may spend of the platform's audit quota, speed-ups and undos, and the
    /// platform's reserve (see [`crate::budget`]).
    pub budgets: crate::budget::AuditBudgets,
}

impl ReleaseSettings {
    /// The contract's limits: 20 MiB packages, a poll after 30 minutes, links good for the
    /// pre-auth code's 30 minutes, three upload attempts.
    pub fn new(public_url: impl Into<String>) -> Self {
        ReleaseSettings {
            public_url: public_url.into(),
            package_limits: crate::package::PackageLimits::default(),
            audit_poll_after: chrono::Duration::minutes(30),
            authorize_link_ttl: chrono::Duration::minutes(30),
            upload_attempts: 3,
            budgets: crate::budget::AuditBudgets::default(),
        }
    }

    /// Where the authorisation page sends the admin back, carrying `state`.
    pub fn authorization_callback_url(&self, state: &str) -> String {
        format!("{}/api/v1/miniprogram/authorization/callback?state={state}", self.public_url.trim_end_matches('/'))
    }
}

/// How long records that only serve a short while are kept before the periodic purge removes
/// them ([`AuthorizationService::purge_records`](crate::AuthorizationService::purge_records)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecordRetention {
    /// An authorisation attempt is kept this long past its expiry (it is of no use once
    /// expired; the time left is for an operator looking into a failed link).
    pub attempts_after_expiry: chrono::Duration,
    /// The id of a processed pushed event is kept this long after it arrived, so a push the
    /// platform retries is still recognised; far longer than the platform's retries last
    /// (minutes).
    pub event_ids: chrono::Duration,
}

impl Default for RecordRetention {
    /// Attempts kept a day past their expiry, event ids seven days.
    fn default() -> Self {
        RecordRetention { attempts_after_expiry: chrono::Duration::days(1), event_ids: chrono::Duration::days(7) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorization_callback_carries_the_state_under_the_public_url() {
        assert_eq!(
            ReleaseSettings::new("https://a.example/").authorization_callback_url("s-1_x"),
            "https://a.example/api/v1/miniprogram/authorization/callback?state=s-1_x"
        );
    }
}
