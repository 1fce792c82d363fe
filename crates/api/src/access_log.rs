//! The access log's request line, with the values of credentials in the query string
//! redacted: the authorisation callbacks carry one-time codes and states (`auth_code`, `code`,
//! `state`), QR polls a `ticket`, the sandbox's stand-in of the platform `secret` and
//! `access_token`. The log keeps the parameter names, so a line still shows what was asked.
use actix_web::dev::ServiceRequest;
use std::borrow::Cow;

/// What stands in the log for a credential's value.
pub const REDACTED: &str = "[redacted]";

/// `GET /path?query HTTP/1.1`, as the log shows it.
pub fn request_line(req: &ServiceRequest) -> String {
    let query = req.query_string();
    let query = if query.is_empty() { String::new() } else { format!("?{}", redact_query(query)) };
    format!("{} {}{query} {:?}", req.method(), req.path(), req.version())
}

/// `query` with the value of every credential parameter replaced by [`REDACTED`]; other
/// parameters stay as sent.
pub fn redact_query(query: &str) -> Cow<'_, str> {
    if !query.split('&').any(|pair| is_credential(&name_of(pair))) {
        return Cow::Borrowed(query);
    }
    let pairs: Vec<Cow<'_, str>> = query
        .split('&')
        .map(|pair| {
            let name = name_of(pair);
            if is_credential(&name) {
                let raw_name = pair.split_once('=').map_or(pair, |(n, _)| n);
                Cow::Owned(format!("{raw_name}={REDACTED}"))
            } else {
                Cow::Borrowed(pair)
            }
        })
        .collect();
    Cow::Owned(pairs.join("&"))
}

/// The decoded name of one `name=value` pair (`auth%5Fcode` is `auth_code`).
fn name_of(pair: &str) -> String {
    let raw = pair.split_once('=').map_or(pair, |(n, _)| n);
    url::form_urlencoded::parse(raw.as_bytes()).next().map(|(n, _)| n.into_owned()).unwrap_or_default()
}

/// Whether a parameter named `name` carries a credential: a code, state, ticket, token, key,
/// secret, password or signature of any spelling.
fn is_credential(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    const EXACT: [&str; 10] = ["code", "state", "ticket", "token", "key", "secret", "password", "signature", "sign", "sig"];
    const SUFFIXES: [&str; 8] = ["_code", "_token", "_secret", "_key", "_signature", "_ticket", "password", "_sign"];
    EXACT.contains(&name.as_str()) || SUFFIXES.iter().any(|s| name.ends_with(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_authorisation_callbacks_credentials_are_redacted() {
        assert_eq!(
            redact_query("auth_code=queryauthcode%40%40%40abc&expires_in=3600&state=st_9fK2"),
            "auth_code=[redacted]&expires_in=3600&state=[redacted]"
        );
        assert_eq!(redact_query("code=061abc&state=qt_1"), "code=[redacted]&state=[redacted]");
        assert_eq!(redact_query("ticket=qt_9fK2mPz0aLw8Rj4Ct1VnYe"), "ticket=[redacted]");
    }

    #[test]
    fn platform_credentials_of_any_spelling_are_redacted() {
        assert_eq!(
            redact_query("grant_type=client_credential&appid=wx1&secret=s3cr3t"),
            "grant_type=client_credential&appid=wx1&secret=[redacted]"
        );
        assert_eq!(redact_query("access_token=AT&x=1"), "access_token=[redacted]&x=1");
        assert_eq!(redact_query("ACCESS_TOKEN=AT"), "ACCESS_TOKEN=[redacted]");
        assert_eq!(redact_query("auth%5Fcode=AC"), "auth%5Fcode=[redacted]");
        assert_eq!(redact_query("msg_signature=ab&timestamp=1&nonce=n"), "msg_signature=[redacted]&timestamp=1&nonce=n");
        assert_eq!(redact_query("component_verify_ticket=t"), "component_verify_ticket=[redacted]");
        assert_eq!(redact_query("new_password=p"), "new_password=[redacted]");
        // A name with no value still hides whatever follows it.
        assert_eq!(redact_query("code"), "code=[redacted]");
    }

    #[test]
    fn other_queries_are_left_as_sent() {
        assert!(matches!(redact_query("page=2&per_page=20&keyword=li%20lei"), Cow::Borrowed("page=2&per_page=20&keyword=li%20lei")));
        assert_eq!(redact_query(""), "");
        assert_eq!(redact_query("status=paid&&tenant_id=3"), "status=paid&&tenant_id=3");
    }
}
