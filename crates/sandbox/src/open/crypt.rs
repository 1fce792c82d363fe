//! The platform's encryption of pushes to a third-party platform, written from the scheme's
//! description (not from `atrium-wechat`'s code, so the client's tests against the sandbox
//! check one implementation against another):
//!
//! - key = base64-decode(EncodingAESKey + "="), 32 bytes (the 43rd character's spare bits are
//!   ignored, as the platform's SDKs do); IV = the key's first 16 bytes; AES-256-CBC;
//! - plaintext = 16 random bytes ‖ big-endian u32 length ‖ message ‖ component appid, padded
//!   to a multiple of 32 bytes with bytes equal to the pad length;
//! - `Encrypt` = base64 of the ciphertext; `msg_signature` = hex SHA-1 of the sorted
//!   concatenation of token, timestamp, nonce and `Encrypt` (`signature`, the same without
//!   `Encrypt`).
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use base64::engine::{GeneralPurpose, GeneralPurposeConfig};
use openssl::symm::{Cipher, Crypter, Mode};

/// Pad block of the plaintext (not the cipher's 16).
const BLOCK: usize = 32;

const KEY_BASE64: GeneralPurpose =
    GeneralPurpose::new(&base64::alphabet::STANDARD, GeneralPurposeConfig::new().with_decode_allow_trailing_bits(true));

/// A push ready to post: its body and the query's signatures.
pub(crate) struct Sealed {
    pub(crate) body: String,
    pub(crate) msg_signature: String,
    pub(crate) signature: String,
}

/// One component's push encryption. Never shown: it holds the token and the key.
pub(crate) struct PushCrypt {
    token: String,
    key: [u8; 32],
    appid: String,
}

/// Hex SHA-1 of the sorted concatenation of `parts`.
pub(crate) fn sorted_sha1(parts: &mut [&str]) -> String {
    parts.sort_unstable();
    hex::encode(openssl::sha::sha1(parts.concat().as_bytes()))
}

/// The 32-byte key of an EncodingAESKey, if it is 43 base64 characters.
pub(crate) fn decode_key(encoding_aes_key: &str) -> Result<[u8; 32], String> {
    let bad = || "the EncodingAESKey must be 43 base64 characters".to_owned();
    if encoding_aes_key.len() != 43 {
        return Err(bad());
    }
    let bytes = KEY_BASE64.decode(format!("{encoding_aes_key}=")).map_err(|_| bad())?;
    bytes.try_into().map_err(|_| bad())
}

impl PushCrypt {
    pub(crate) fn new(token: &str, encoding_aes_key: &str, appid: &str) -> Result<Self, String> {
        Ok(PushCrypt { token: token.to_owned(), key: decode_key(encoding_aes_key)?, appid: appid.to_owned() })
    }

    fn cipher(&self, mode: Mode, input: &[u8]) -> Result<Vec<u8>, String> {
        let fail = |_| "the cipher failed".to_owned();
        let cipher = Cipher::aes_256_cbc();
        let mut crypter = Crypter::new(cipher, mode, &self.key, Some(&self.key[..16])).map_err(fail)?;
        crypter.pad(false);
        let mut out = vec![0u8; input.len() + cipher.block_size()];
        let mut n = crypter.update(input, &mut out).map_err(fail)?;
        n += crypter.finalize(&mut out[n..]).map_err(fail)?;
        out.truncate(n);
        Ok(out)
    }

    /// `Encrypt` of `message` with the given 16 random bytes.
    pub(crate) fn encrypt_with(&self, random: &[u8; 16], message: &str) -> Result<String, String> {
        let len = u32::try_from(message.len()).map_err(|_| "the message is too long".to_owned())?;
        let mut plain = Vec::with_capacity(20 + message.len() + self.appid.len() + BLOCK);
        plain.extend_from_slice(random);
        plain.extend_from_slice(&len.to_be_bytes());
        plain.extend_from_slice(message.as_bytes());
        plain.extend_from_slice(self.appid.as_bytes());
        let pad = BLOCK - plain.len() % BLOCK;
        plain.extend(std::iter::repeat_n(pad as u8, pad));
        Ok(STANDARD.encode(self.cipher(Mode::Encrypt, &plain)?))
    }

    /// The message in `encrypt` and the appid it names (tests check pushes with it).
    #[cfg(test)]
    pub(crate) fn decrypt(&self, encrypt: &str) -> Result<(String, String), String> {
        let cipher = STANDARD.decode(encrypt).map_err(|_| "not base64".to_owned())?;
        let plain = self.cipher(Mode::Decrypt, &cipher)?;
        let pad = usize::from(*plain.last().ok_or("empty")?);
        let body = &plain[..plain.len() - pad];
        let len = u32::from_be_bytes([body[16], body[17], body[18], body[19]]) as usize;
        let (message, appid) = body[20..].split_at(len);
        Ok((String::from_utf8_lossy(message).into_owned(), String::from_utf8_lossy(appid).into_owned()))
    }

    /// The push body carrying `message`, addressed by the outer element `to` (`AppId` for
    /// component events, `ToUserName` for a mini-program's messages), and its signatures.
    pub(crate) fn seal(&self, message: &str, to: (&str, &str), timestamp: &str, nonce: &str) -> Result<Sealed, String> {
        let mut random = [0u8; 16];
        openssl::rand::rand_bytes(&mut random).map_err(|_| "no randomness".to_owned())?;
        let encrypt = self.encrypt_with(&random, message)?;
        let msg_signature = sorted_sha1(&mut [&self.token, timestamp, nonce, &encrypt]);
        let signature = sorted_sha1(&mut [&self.token, timestamp, nonce]);
        let (tag, value) = to;
        let body = format!("<xml><{tag}><![CDATA[{value}]]></{tag}><Encrypt><![CDATA[{encrypt}]]></Encrypt></xml>");
        Ok(Sealed { body, msg_signature, signature })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    /// Vectors computed by `crates/wechat/tests/fixtures/open/make_vectors.py` with Python's
    /// `cryptography`, independently of both Rust implementations.
    const VECTORS: &str = include_str!("../../../wechat/tests/fixtures/open/vectors.json");

    #[test]
    fn encryption_and_signatures_match_the_independent_vectors() {
        let v: Value = serde_json::from_str(VECTORS).unwrap();
        let token = v["token"].as_str().unwrap();
        let key = v["encoding_aes_key"].as_str().unwrap();
        assert_eq!(hex::encode(decode_key(key).unwrap()), v["key_hex"].as_str().unwrap());
        for case in v["cases"].as_array().unwrap() {
            let s = |k: &str| case[k].as_str().unwrap();
            let crypt = PushCrypt::new(token, key, s("appid")).unwrap();
            let random: [u8; 16] = hex::decode(s("random_hex")).unwrap().try_into().unwrap();
            let encrypt = crypt.encrypt_with(&random, s("message")).unwrap();
            assert_eq!(encrypt, s("encrypt"), "{}", s("name"));
            assert_eq!(sorted_sha1(&mut [token, s("timestamp"), s("nonce"), &encrypt]), s("msg_signature"), "{}", s("name"));
            assert_eq!(crypt.decrypt(&encrypt).unwrap(), (s("message").to_owned(), s("appid").to_owned()));
        }
    }

    #[test]
    fn a_sealed_push_carries_the_addressee_and_both_signatures() {
        let crypt = PushCrypt::new("tok", "abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", "wx_c").unwrap();
        let sealed = crypt.seal("<xml><A>1</A></xml>", ("AppId", "wx_c"), "1700000000", "n1").unwrap();
        let encrypt = sealed.body.split("<Encrypt><![CDATA[").nth(1).unwrap().split("]]>").next().unwrap();
        assert!(sealed.body.starts_with("<xml><AppId><![CDATA[wx_c]]></AppId><Encrypt>"), "{}", sealed.body);
        assert_eq!(sealed.msg_signature, sorted_sha1(&mut ["tok", "1700000000", "n1", encrypt]));
        assert_eq!(sealed.signature, sorted_sha1(&mut ["tok", "1700000000", "n1"]));
        assert_eq!(crypt.decrypt(encrypt).unwrap().0, "<xml><A>1</A></xml>");
    }

    #[test]
    fn keys_of_the_wrong_length_or_alphabet_are_refused() {
        assert!(decode_key("short").is_err());
        assert!(decode_key(&"*".repeat(43)).is_err());
    }
}
