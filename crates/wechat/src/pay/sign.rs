//! Signatures of the pay platform (API v3): SHA256withRSA (PKCS#1 v1.5), base64.
//!
//! - Our requests are signed with the merchant key over
//!   `METHOD\nPATH_AND_QUERY\nTIMESTAMP\nNONCE\nBODY\n` and carry the result in
//!   `Authorization: WECHATPAY2-SHA256-RSA2048 mchid="…",nonce_str="…",timestamp="…",serial_no="…",signature="…"`.
//! - The mini-program's `paySign` is the same signature over
//!   `appId\ntimeStamp\nnonceStr\npackage\n`.
//! - The platform's answers and notifications are signed over `TIMESTAMP\nNONCE\nBODY\n` on
//!   the raw body bytes, with the key its `Wechatpay-Serial` names: `PUB_KEY_ID_…` in
//!   public-key mode, a platform certificate's serial otherwise.
//! - Sensitive request fields (a profit-sharing receiver's name) go encrypted under a platform
//!   key: RSA-OAEP with SHA-1, base64; the request names that key in `Wechatpay-Serial`.
use atrium_payments::PlatformKey;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private, Public};
use openssl::rsa::Padding;
use openssl::sign::{Signer, Verifier};
use openssl::x509::X509;
use std::collections::HashMap;

/// Answers and notifications this far (seconds) from now or further are refused.
pub const MAX_CLOCK_SKEW_SECS: i64 = 300;
/// The prefix of the platform's probe signatures, which must never verify.
pub const PROBE_PREFIX: &str = "WECHATPAY/SIGNTEST/";

/// The string our request signature covers.
pub fn request_message(method: &str, path_and_query: &str, timestamp: i64, nonce: &str, body: &str) -> String {
    format!("{method}\n{path_and_query}\n{timestamp}\n{nonce}\n{body}\n")
}

/// The string a mini-program `paySign` covers.
pub fn pay_sign_message(app_id: &str, time_stamp: &str, nonce_str: &str, package: &str) -> String {
    format!("{app_id}\n{time_stamp}\n{nonce_str}\n{package}\n")
}

/// The bytes a platform signature covers: `TIMESTAMP\nNONCE\nBODY\n` with the body as received.
pub fn answer_message(timestamp: &str, nonce: &str, body: &[u8]) -> Vec<u8> {
    let mut m = Vec::with_capacity(timestamp.len() + nonce.len() + body.len() + 3);
    m.extend_from_slice(timestamp.as_bytes());
    m.push(b'\n');
    m.extend_from_slice(nonce.as_bytes());
    m.push(b'\n');
    m.extend_from_slice(body);
    m.push(b'\n');
    m
}

/// The `Authorization` header value of a signed request.
pub fn authorization(mchid: &str, serial_no: &str, timestamp: i64, nonce: &str, signature: &str) -> String {
    format!(
        "WECHATPAY2-SHA256-RSA2048 mchid=\"{mchid}\",nonce_str=\"{nonce}\",timestamp=\"{timestamp}\",serial_no=\"{serial_no}\",signature=\"{signature}\""
    )
}

/// The merchant's private key, ready to sign. No `Debug`: it holds the key.
pub struct MerchantSigner {
    key: PKey<Private>,
}

impl MerchantSigner {
    /// From a PEM private key, PKCS#8 or PKCS#1. The error never repeats the PEM.
    pub fn from_pem(pem: &str) -> Result<Self, String> {
        let key =
            PKey::private_key_from_pem(pem.as_bytes()).map_err(|_| "the merchant private key is not a readable PEM key".to_owned())?;
        if key.rsa().is_err() {
            return Err("the merchant private key is not an RSA key".into());
        }
        Ok(MerchantSigner { key })
    }

    /// Base64 SHA256withRSA (PKCS#1 v1.5) of `message`.
    pub fn sign(&self, message: &str) -> Result<String, String> {
        let signed = (|| {
            let mut signer = Signer::new(MessageDigest::sha256(), &self.key)?;
            signer.update(message.as_bytes())?;
            signer.sign_to_vec()
        })();
        signed.map(|s| STANDARD.encode(s)).map_err(|_| "signing with the merchant private key failed".to_owned())
    }
}

/// The public key in a PEM public key or a PEM certificate.
pub(crate) fn public_key_from_pem(pem: &str) -> Option<PKey<Public>> {
    PKey::public_key_from_pem(pem.as_bytes()).ok().or_else(|| X509::from_pem(pem.as_bytes()).ok().and_then(|c| c.public_key().ok()))
}

/// Base64 RSA-OAEP (SHA-1, MGF1 with SHA-1) of `plaintext` under the platform key `key`, as
/// the platform wants a sensitive field. The error never repeats the plaintext.
pub fn encrypt_sensitive(key: &PKey<Public>, plaintext: &str) -> Result<String, String> {
    let sealed = (|| {
        let mut encrypter = openssl::encrypt::Encrypter::new(key)?;
        encrypter.set_rsa_padding(Padding::PKCS1_OAEP)?;
        let mut out = vec![0u8; encrypter.encrypt_len(plaintext.as_bytes())?];
        let len = encrypter.encrypt(plaintext.as_bytes(), &mut out)?;
        out.truncate(len);
        Ok::<_, openssl::error::ErrorStack>(out)
    })();
    sealed
        .map(|s| STANDARD.encode(s))
        .map_err(|_| "encrypting a sensitive field with the platform key failed (too long for the key?)".to_owned())
}

/// The `Wechatpay-*` headers of an answer or notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedHeaders {
    pub timestamp: String,
    pub nonce: String,
    pub signature: String,
    pub serial: String,
}

/// Why a platform signature was not accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("a Wechatpay header is missing")]
    MissingHeaders,
    #[error("a signature probe (WECHATPAY/SIGNTEST/)")]
    Probe,
    #[error("the timestamp is 300 s or more away from now")]
    Stale,
    #[error("no platform key has this Wechatpay-Serial")]
    UnknownSerial,
    #[error("the signature does not verify")]
    BadSignature,
}

/// The platform's keys by id, for verifying answers and notifications.
pub struct PlatformVerifier {
    keys: HashMap<String, PKey<Public>>,
}

impl PlatformVerifier {
    /// From every key the platform may sign with (PEM public keys or certificates).
    pub fn new(keys: &[PlatformKey]) -> Result<Self, String> {
        let mut map = HashMap::new();
        for k in keys {
            let key =
                public_key_from_pem(&k.pem).ok_or_else(|| format!("platform key {} is not a readable PEM key or certificate", k.id))?;
            map.insert(k.id.clone(), key);
        }
        Ok(PlatformVerifier { keys: map })
    }

    /// The key with id `id`, to encrypt a sensitive field under.
    pub fn key(&self, id: &str) -> Option<&PKey<Public>> {
        self.keys.get(id)
    }

    /// Checks a platform signature over `body` (the raw bytes received) at `now` (Unix
    /// seconds): not a probe, timestamp within 300 s, a known serial, a valid signature.
    pub fn verify(&self, headers: &SignedHeaders, body: &[u8], now: i64) -> Result<(), VerifyError> {
        if headers.timestamp.is_empty() || headers.nonce.is_empty() || headers.signature.is_empty() || headers.serial.is_empty() {
            return Err(VerifyError::MissingHeaders);
        }
        if headers.signature.starts_with(PROBE_PREFIX) {
            return Err(VerifyError::Probe);
        }
        let ts: i64 = headers.timestamp.parse().map_err(|_| VerifyError::Stale)?;
        if now.abs_diff(ts) >= MAX_CLOCK_SKEW_SECS as u64 {
            return Err(VerifyError::Stale);
        }
        let key = self.keys.get(&headers.serial).ok_or(VerifyError::UnknownSerial)?;
        let signature = STANDARD.decode(headers.signature.as_bytes()).map_err(|_| VerifyError::BadSignature)?;
        let message = answer_message(&headers.timestamp, &headers.nonce, body);
        let ok = (|| {
            let mut verifier = Verifier::new(MessageDigest::sha256(), key)?;
            verifier.update(&message)?;
            verifier.verify(&signature)
        })()
        .unwrap_or(false);
        if ok { Ok(()) } else { Err(VerifyError::BadSignature) }
    }
}
