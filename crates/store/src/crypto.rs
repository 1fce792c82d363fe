//! Encryption of sensitive fields at rest (AES-256-GCM) and blind indexes for uniqueness.
use aes_gcm::aead::{Aead, KeyInit};
use aes_gcm::{Aes256Gcm, Key, Nonce};
use atrium_kernel::Error;
use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use hmac::{Hmac, Mac};
use rand::RngCore;
use sha2::Sha256;

/// Encrypts and decrypts field values under the master key. Ciphertexts are
/// `v1:` + base64(nonce ‖ ciphertext ‖ tag) with a fresh 96-bit nonce each time.
#[derive(Clone)]
pub struct FieldCipher {
    aead: Aes256Gcm,
    index_key: [u8; 32],
}

impl FieldCipher {
    pub fn new(master_key: &[u8; 32]) -> Self {
        // Separate keys for encryption and for blind indexes, both derived from the master key.
        let derive = |label: &[u8]| -> [u8; 32] {
            let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(master_key).expect("HMAC takes any key length");
            mac.update(label);
            mac.finalize().into_bytes().into()
        };
        let enc_key = derive(b"atrium field encryption v1");
        FieldCipher { aead: Aes256Gcm::new(&Key::<Aes256Gcm>::from(enc_key)), index_key: derive(b"atrium blind index v1") }
    }

    pub fn encrypt(&self, plaintext: &str) -> Result<String, Error> {
        let mut nonce = [0u8; 12];
        rand::rng().fill_bytes(&mut nonce);
        let ct = self.aead.encrypt(&Nonce::from(nonce), plaintext.as_bytes()).map_err(|_| Error::internal("field encryption failed"))?;
        let mut out = Vec::with_capacity(12 + ct.len());
        out.extend_from_slice(&nonce);
        out.extend_from_slice(&ct);
        Ok(format!("v1:{}", B64.encode(out)))
    }

    pub fn decrypt(&self, stored: &str) -> Result<String, Error> {
        let bad = || Error::internal("a stored field cannot be decrypted (wrong ATRIUM_MASTER_KEY?)");
        let raw = B64.decode(stored.strip_prefix("v1:").ok_or_else(bad)?).map_err(|_| bad())?;
        if raw.len() < 12 + 16 {
            return Err(bad());
        }
        let (nonce, ct) = raw.split_at(12);
        let nonce: [u8; 12] = nonce.try_into().map_err(|_| bad())?;
        let pt = self.aead.decrypt(&Nonce::from(nonce), ct).map_err(|_| bad())?;
        String::from_utf8(pt).map_err(|_| bad())
    }

    /// A keyed hash of a value, to enforce uniqueness without storing it in clear.
    pub fn blind_index(&self, value: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.index_key).expect("HMAC takes any key length");
        mac.update(value.as_bytes());
        hex_lower(&mac.finalize().into_bytes())
    }
}

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_round_trips_and_never_appears_in_the_ciphertext() {
        let c = FieldCipher::new(&[7u8; 32]);
        let ct = c.encrypt("11010519491231002X").unwrap();
        assert!(!ct.contains("1101051949"));
        assert_ne!(ct, c.encrypt("11010519491231002X").unwrap(), "fresh nonce each time");
        assert_eq!(c.decrypt(&ct).unwrap(), "11010519491231002X");
    }

    #[test]
    fn another_key_cannot_decrypt() {
        let ct = FieldCipher::new(&[7u8; 32]).encrypt("secret").unwrap();
        assert!(FieldCipher::new(&[8u8; 32]).decrypt(&ct).is_err());
    }

    #[test]
    fn blind_indexes_are_stable_and_keyed() {
        let a = FieldCipher::new(&[1u8; 32]);
        assert_eq!(a.blind_index("x"), a.blind_index("x"));
        assert_ne!(a.blind_index("x"), FieldCipher::new(&[2u8; 32]).blind_index("x"));
    }
}
