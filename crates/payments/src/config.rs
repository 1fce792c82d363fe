//! The payments domain's settings.
use atrium_kernel::Id;

/// How payments behave. The server fills it from configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentSettings {
    /// The server's public base URL (`ATRIUM_PUBLIC_URL`, https, no query), e.g.
    /// `https://atrium.example.com`; notification URLs are built from it.
    pub public_url: String,
    /// How long an order can be paid when the caller sets no `time_expire`.
    pub default_expiry: chrono::Duration,
    /// The latest `time_expire` a caller may set, from now.
    pub max_expiry: chrono::Duration,
    /// No refunds after this long from the payment (the platform's limit is a year).
    pub refund_window: chrono::Duration,
    /// At most this many refunds per transaction (the platform's limit is 50).
    pub max_refunds: u32,
    /// How long after a sub-merchant's payment it is shared (`ATRIUM_SHARING_DELAY_SECS`,
    /// default 120 s; the platform refuses a share in the first minute).
    pub sharing_delay: chrono::Duration,
    /// The first wait of the sharing job after a run that could not finish
    /// (`ATRIUM_SHARING_RETRY_SECS`, default 60 s); later waits are 5, 10 and 30 times it, as
    /// the settle jobs' back-off is of its minute.
    pub sharing_retry: chrono::Duration,
}

impl PaymentSettings {
    /// The platform's own limits and a two-hour default expiry.
    pub fn new(public_url: impl Into<String>) -> Self {
        PaymentSettings {
            public_url: public_url.into(),
            default_expiry: chrono::Duration::hours(2),
            max_expiry: chrono::Duration::days(7),
            refund_window: chrono::Duration::days(365),
            max_refunds: 50,
            sharing_delay: chrono::Duration::seconds(120),
            sharing_retry: chrono::Duration::seconds(60),
        }
    }

    /// Where the pay platform sends `tenant_id`'s notifications.
    pub fn notify_url(&self, tenant_id: Id) -> String {
        format!("{}/api/v1/miniprogram/payment/notify/{tenant_id}", self.public_url.trim_end_matches('/'))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_notify_url_names_the_tenant_under_the_public_url() {
        assert_eq!(PaymentSettings::new("https://a.example/").notify_url(7), "https://a.example/api/v1/miniprogram/payment/notify/7");
    }
}
