//! The platform's message encryption for pushes to a third-party platform (the scheme its SDKs
//! call WXBizMsgCrypt).
//!
//! - The key is the 43-character EncodingAESKey, base64-decoded with one `=` appended: 32
//!   bytes. The IV is its first 16 bytes. Cipher: AES-256-CBC.
//! - Plaintext: 16 random bytes ‖ the message's length (4 bytes, big-endian) ‖ the message ‖
//!   the component appid, padded PKCS#7-style to a multiple of 32 bytes (not the cipher's 16).
//! - `Encrypt` = base64 of the ciphertext; `msg_signature` = hex SHA-1 of the sorted
//!   concatenation of the token, the timestamp, the nonce and `Encrypt`.
//!
//! [`MessageCrypt::open`] verifies the signature (in constant time), decrypts and checks that
//! the message names our appid; [`MessageCrypt::seal`] does the reverse (for replies and for
//! a local stand-in of the platform). The key and the token never appear in errors or `Debug`.
use super::xml;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use openssl::symm::{Cipher, Crypter, Mode};
use std::fmt;

/// The block the plaintext is padded to.
const BLOCK: usize = 32;

/// EncodingAESKeys are 43 random characters: the last one may carry bits past the key's 256,
/// which a strict decoder refuses. The platform's SDKs ignore them, and so does this one.
const KEY_BASE64: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::STANDARD, GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true));

/// Why a push was refused, or the credentials unusable. Never carries the key or the token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CryptError {
    #[error("the EncodingAESKey must be 43 base64 characters")]
    BadKey,
    #[error("the msg_signature does not verify")]
    BadSignature,
    /// The decrypted message is addressed to another app.
    #[error("the message is for another app")]
    ForeignAppid,
    /// Not the expected XML, not base64, bad padding or length.
    #[error("the message is malformed: {0}")]
    Malformed(String),
}

/// The encryption of one third-party platform: its token, key and appid.
#[derive(Clone)]
pub struct MessageCrypt {
    token: String,
    key: [u8; 32],
    appid: String,
}

impl fmt::Debug for MessageCrypt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MessageCrypt").field("appid", &self.appid).field("token", &"***").field("key", &"***").finish()
    }
}

/// Hex SHA-1 over the sorted concatenation of `parts`.
pub fn msg_signature(token: &str, timestamp: &str, nonce: &str, encrypt: &str) -> String {
    let mut parts = [token, timestamp, nonce, encrypt];
    parts.sort_unstable();
    hex::encode(openssl::sha::sha1(parts.concat().as_bytes()))
}

/// Whether `a` equals `b`, in time independent of where they differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len() && openssl::memcmp::eq(a.as_bytes(), b.as_bytes())
}

fn malformed(what: impl Into<String>) -> CryptError {
    CryptError::Malformed(what.into())
}

impl MessageCrypt {
    /// Fails only on an EncodingAESKey that is not 43 base64 characters.
    pub fn new(token: impl Into<String>, encoding_aes_key: &str, appid: impl Into<String>) -> Result<Self, CryptError> {
        if encoding_aes_key.len() != 43 {
            return Err(CryptError::BadKey);
        }
        let bytes = KEY_BASE64.decode(format!("{encoding_aes_key}=")).map_err(|_| CryptError::BadKey)?;
        let key: [u8; 32] = bytes.try_into().map_err(|_| CryptError::BadKey)?;
        Ok(MessageCrypt { token: token.into(), key, appid: appid.into() })
    }

    pub fn appid(&self) -> &str {
        &self.appid
    }

    pub fn signature(&self, timestamp: &str, nonce: &str, encrypt: &str) -> String {
        msg_signature(&self.token, timestamp, nonce, encrypt)
    }

    fn cipher(&self, mode: Mode, input: &[u8]) -> Result<Vec<u8>, CryptError> {
        let fail = |_| malformed("the cipher failed");
        let cipher = Cipher::aes_256_cbc();
        let mut crypter = Crypter::new(cipher, mode, &self.key, Some(&self.key[..16])).map_err(fail)?;
        crypter.pad(false);
        let mut out = vec![0u8; input.len() + cipher.block_size()];
        let mut n = crypter.update(input, &mut out).map_err(fail)?;
        n += crypter.finalize(&mut out[n..]).map_err(fail)?;
        out.truncate(n);
        Ok(out)
    }

    /// `Encrypt` for `message` with the given 16 random bytes (tests pin them; [`seal`] draws
    /// them).
    ///
    /// [`seal`]: MessageCrypt::seal
    pub fn encrypt_with(&self, random: &[u8; 16], message: &str) -> Result<String, CryptError> {
        let len = u32::try_from(message.len()).map_err(|_| malformed("the message is too long"))?;
        let mut plain = Vec::with_capacity(20 + message.len() + self.appid.len() + BLOCK);
        plain.extend_from_slice(random);
        plain.extend_from_slice(&len.to_be_bytes());
        plain.extend_from_slice(message.as_bytes());
        plain.extend_from_slice(self.appid.as_bytes());
        let pad = BLOCK - plain.len() % BLOCK;
        plain.extend(std::iter::repeat_n(pad as u8, pad));
        Ok(STANDARD.encode(self.cipher(Mode::Encrypt, &plain)?))
    }

    /// The message inside `Encrypt`, if it is addressed to our appid.
    pub fn decrypt(&self, encrypt: &str) -> Result<String, CryptError> {
        let cipher = STANDARD.decode(encrypt.trim()).map_err(|_| malformed("Encrypt is not base64"))?;
        if cipher.is_empty() || cipher.len() % 16 != 0 {
            return Err(malformed("Encrypt is not a whole number of blocks"));
        }
        let plain = self.cipher(Mode::Decrypt, &cipher)?;
        let pad = usize::from(*plain.last().ok_or_else(|| malformed("empty"))?);
        if !(1..=BLOCK).contains(&pad) || pad > plain.len() {
            return Err(malformed("bad padding"));
        }
        let body = &plain[..plain.len() - pad];
        if body.len() < 20 {
            return Err(malformed("too short"));
        }
        let len = u32::from_be_bytes([body[16], body[17], body[18], body[19]]) as usize;
        let rest = &body[20..];
        if len > rest.len() {
            return Err(malformed("the length exceeds the message"));
        }
        let (message, appid) = rest.split_at(len);
        if appid != self.appid.as_bytes() {
            return Err(CryptError::ForeignAppid);
        }
        String::from_utf8(message.to_vec()).map_err(|_| malformed("the message is not UTF-8"))
    }

    /// A push's decrypted message: the body's `Encrypt`, with its `msg_signature` checked
    /// first.
    pub fn open(&self, timestamp: &str, nonce: &str, msg_signature: &str, body: &[u8]) -> Result<String, CryptError> {
        let body = std::str::from_utf8(body).map_err(|_| malformed("the body is not UTF-8"))?;
        // Only the part the signature covers is read before the signature is checked: the
        // rest of an unsigned body is nobody's to parse (or to quote in an error).
        let encrypt = xml::element(body, "Encrypt").ok_or_else(|| malformed("no Encrypt"))?;
        if !same(&self.signature(timestamp, nonce, &encrypt), &msg_signature.to_ascii_lowercase()) {
            return Err(CryptError::BadSignature);
        }
        self.decrypt(&encrypt)
    }

    /// A push (or reply) body carrying `message` encrypted, and its `msg_signature`.
    /// `to` is the outer element naming the addressee (`AppId` for component pushes,
    /// `ToUserName` for messages), with its value.
    pub fn seal(&self, message: &str, to: (&str, &str), timestamp: &str, nonce: &str) -> Result<(String, String), CryptError> {
        let mut random = [0u8; 16];
        openssl::rand::rand_bytes(&mut random).map_err(|_| malformed("no randomness"))?;
        let encrypt = self.encrypt_with(&random, message)?;
        let signature = self.signature(timestamp, nonce, &encrypt);
        let (tag, value) = to;
        let body = format!("<xml><{tag}><![CDATA[{value}]]></{tag}><Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>");
        Ok((body, signature))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG";

    #[test]
    fn a_sealed_message_opens_and_a_tampered_one_does_not() {
        let crypt = MessageCrypt::new("tok", KEY, "wx_component").unwrap();
        let (body, sig) = crypt.seal("<xml><A>1</A></xml>", ("AppId", "wx_component"), "1700000000", "n1").unwrap();
        assert_eq!(crypt.open("1700000000", "n1", &sig, body.as_bytes()).unwrap(), "<xml><A>1</A></xml>");
        assert_eq!(crypt.open("1700000001", "n1", &sig, body.as_bytes()), Err(CryptError::BadSignature));
        assert_eq!(crypt.open("1700000000", "n1", "0".repeat(40).as_str(), body.as_bytes()), Err(CryptError::BadSignature));
    }

    #[test]
    fn a_message_for_another_app_is_refused() {
        let theirs = MessageCrypt::new("tok", KEY, "wx_other").unwrap();
        let ours = MessageCrypt::new("tok", KEY, "wx_component").unwrap();
        let (body, sig) = theirs.seal("<xml/>", ("AppId", "wx_component"), "1", "n").unwrap();
        assert_eq!(ours.open("1", "n", &sig, body.as_bytes()), Err(CryptError::ForeignAppid));
    }

    #[test]
    fn keys_of_the_wrong_length_or_alphabet_are_refused_and_never_shown() {
        assert_eq!(MessageCrypt::new("t", "short", "a").unwrap_err(), CryptError::BadKey);
        assert_eq!(MessageCrypt::new("t", &"*".repeat(43), "a").unwrap_err(), CryptError::BadKey);
        let shown = format!("{:?}", MessageCrypt::new("sekrit-token", KEY, "wx1").unwrap());
        assert!(!shown.contains("sekrit") && shown.contains("wx1"), "{shown}");
    }

    #[test]
    fn garbage_is_malformed_not_a_panic() {
        let crypt = MessageCrypt::new("tok", KEY, "wx").unwrap();
        for encrypt in ["", "not base64!", "AAAA", &STANDARD.encode([0u8; 32])] {
            assert!(matches!(crypt.decrypt(encrypt), Err(CryptError::Malformed(_)) | Err(CryptError::ForeignAppid)), "{encrypt}");
        }
        assert!(matches!(crypt.open("1", "n", "s", b"<xml><NoEncrypt/></xml>"), Err(CryptError::Malformed(_))));
        assert!(matches!(crypt.open("1", "n", "s", b"\xff\xfe"), Err(CryptError::Malformed(_))));
    }
}
