//! Random secrets and their stored form, shared by every domain that issues tokens.
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
    fn the_stored_form_is_sha256_hex() {
        assert_eq!(hash_secret("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
