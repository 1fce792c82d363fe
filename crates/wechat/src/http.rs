//! HTTP clients over one TLS context per process.
//!
//! A TLS context loads the system's CA bundle and looks up its algorithms; with OpenSSL 3.0
//! that takes milliseconds, and each `reqwest::Client` used to build its own. The platform
//! clients of a server (pay, open platform, login, access tokens) now share one context.
//! Clients themselves stay separate: each keeps its pooled connections on the runtime that
//! opened them.

use std::sync::OnceLock;

/// A client builder over the process's shared TLS context (the system's roots, the default
/// protocol versions; what `reqwest::Client::builder()` would build each time).
pub fn client_builder() -> Result<reqwest::ClientBuilder, native_tls::Error> {
    Ok(reqwest::Client::builder().tls_backend_preconfigured(shared_tls()?))
}

fn shared_tls() -> Result<native_tls::TlsConnector, native_tls::Error> {
    static SHARED: OnceLock<native_tls::TlsConnector> = OnceLock::new();
    if let Some(tls) = SHARED.get() {
        return Ok(tls.clone());
    }
    let built = native_tls::TlsConnector::new()?;
    Ok(SHARED.get_or_init(|| built).clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    async fn fetch_once() -> String {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let served = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut buf = [0u8; 1024];
            let _ = s.read(&mut buf).await.unwrap();
            s.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok").await.unwrap();
        });
        let client = client_builder().unwrap().build().unwrap();
        let body = client.get(format!("http://{addr}/")).send().await.unwrap().text().await.unwrap();
        served.await.unwrap();
        body
    }

    #[test]
    fn clients_on_the_shared_context_work_on_one_runtime_after_another() {
        // Each test server has its own runtime; the context carries nothing of one.
        for _ in 0..2 {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
            assert_eq!(rt.block_on(fetch_once()), "ok");
        }
    }
}
