//! Secrets: random tokens and their stored form, random numbers for platforms, a secret held in
//! memory ([`Secret`]), and comparison in constant time.
use base64::Engine;
use rand::RngCore;
use sha2::{Digest, Sha256};

/// `bytes` of CSPRNG output, base64url without padding.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut buf);
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(buf)
}

/// SHA-256 of a high-entropy secret (a refresh or API token), hex: what is stored and looked
/// up. A slow hash would add nothing but latency for a random 128-bit-or-more secret; never
/// use this for passwords or short codes.
pub fn hash_secret(secret: &str) -> String {
    hex::encode(Sha256::digest(secret.as_bytes()))
}

/// `len` random characters of `[0-9A-Za-z_-]`: the random part of order, transaction and
/// refund numbers, nonces of signed requests, probe numbers.
pub fn nonce(len: usize) -> String {
    let mut s = random_token(len);
    s.truncate(len);
    s
}

/// Whether `a` equals `b`, in a time that depends only on their lengths (a hash or a code
/// presented by a caller).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A secret held in memory: a PEM private key, an APIv3 key, a refresh token. `Debug` and
/// `Display` show `***`, it has no `Serialize`, and the store keeps it encrypted at rest (it
/// encrypts on write and decrypts on read, so a domain only ever sees the plain value).
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret value.
    pub fn new(value: impl Into<String>) -> Self {
        Secret(value.into())
    }

    /// The plain value, for the adapter that signs or decrypts with it and the store that
    /// encrypts it. Never log it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

impl std::fmt::Display for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("***")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn random_tokens_differ_and_carry_the_requested_entropy() {
        let a = random_token(32);
        assert_eq!(a.len(), 43);
        assert_ne!(a, random_token(32));
    }

    #[test]
    fn a_nonce_has_the_length_asked_for_and_only_number_characters() {
        let n = nonce(24);
        assert_eq!(n.len(), 24);
        assert!(n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'), "{n}");
        assert_ne!(n, nonce(24));
    }

    #[test]
    fn constant_time_eq_compares_contents_and_lengths() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }

    #[test]
    fn a_secret_never_shows_itself() {
        let s = Secret::new("-----BEGIN PRIVATE KEY-----");
        assert_eq!(format!("{s:?} {s}"), "*** ***");
        assert_eq!(s.expose(), "-----BEGIN PRIVATE KEY-----");
    }

    #[test]
    fn the_stored_form_is_sha256_hex() {
        assert_eq!(hash_secret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
