//! The pay platform's cryptography, from the platform's side: its own key pair (public-key
//! mode), merchant keys and certificates it issues, request signatures it checks, answer and
//! notification signatures it makes, and the AES-256-GCM resource encryption.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use openssl::asn1::{Asn1Integer, Asn1Time};
use openssl::bn::BigNum;
use openssl::hash::MessageDigest;
use openssl::pkey::{PKey, Private, Public};
use openssl::rsa::Rsa;
use openssl::sign::{Signer, Verifier};
use openssl::symm::{Cipher, encrypt_aead};
use openssl::x509::{X509, X509NameBuilder};
use rand::Rng;

/// Request timestamps this far (seconds) from now or further are refused.
pub(crate) const MAX_CLOCK_SKEW_SECS: i64 = 300;
/// The scheme of a signed request's `Authorization` header.
pub(crate) const AUTH_SCHEME: &str = "WECHATPAY2-SHA256-RSA2048";
/// The fixed start of the sandbox's platform public key id, as the platform's ids start.
const PUB_KEY_ID_START: &str = "PUB_KEY_ID_0114232";
/// Digits after `PUB_KEY_ID_` in the platform's ids.
const PUB_KEY_ID_DIGITS: usize = 34;
const RSA_BITS: u32 = 2048;
const GCM_TAG_LEN: usize = 16;

/// Random characters from `alphabet`.
pub(crate) fn random_chars(len: usize, alphabet: &[u8]) -> String {
    let mut rng = rand::rng();
    (0..len).map(|_| alphabet[rng.random_range(0..alphabet.len())] as char).collect()
}

pub(crate) const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(crate) const DIGITS: &[u8] = b"0123456789";

fn rsa_key() -> Result<PKey<Private>, String> {
    Rsa::generate(RSA_BITS).and_then(PKey::from_rsa).map_err(|e| format!("RSA key generation failed: {e}"))
}

pub(crate) fn sign(key: &PKey<Private>, message: &[u8]) -> Result<String, String> {
    let signed = (|| {
        let mut signer = Signer::new(MessageDigest::sha256(), key)?;
        signer.update(message)?;
        signer.sign_to_vec()
    })();
    signed.map(|s| STANDARD.encode(s)).map_err(|e| format!("signing failed: {e}"))
}

/// The sandbox's platform key pair, in public-key mode: answers and notifications are signed
/// with it and carry its id as `Wechatpay-Serial`.
pub(crate) struct PlatformKeyPair {
    key: PKey<Private>,
    pub(crate) id: String,
    pub(crate) public_pem: String,
}

impl PlatformKeyPair {
    pub(crate) fn generate() -> Result<Self, String> {
        let key = rsa_key()?;
        let public_pem = key.public_key_to_pem().map_err(|e| format!("PEM encoding failed: {e}"))?;
        let public_pem = String::from_utf8(public_pem).map_err(|_| "PEM encoding failed".to_owned())?;
        let id = format!("{PUB_KEY_ID_START}{}", random_chars(PUB_KEY_ID_DIGITS + 11 - PUB_KEY_ID_START.len(), DIGITS));
        Ok(PlatformKeyPair { key, id, public_pem })
    }

    /// Base64 SHA256withRSA over `TIMESTAMP\nNONCE\nBODY\n`.
    pub(crate) fn sign_answer(&self, timestamp: &str, nonce: &str, body: &[u8]) -> Result<String, String> {
        let mut message = Vec::with_capacity(timestamp.len() + nonce.len() + body.len() + 3);
        for part in [timestamp.as_bytes(), nonce.as_bytes(), body] {
            message.extend_from_slice(part);
            message.push(b'\n');
        }
        sign(&self.key, &message)
    }

    /// A sensitive request field sealed under this key (base64 RSA-OAEP, SHA-1), opened; `None`
    /// when it is not base64, does not decrypt, or is not UTF-8.
    pub(crate) fn decrypt_sensitive(&self, sealed: &str) -> Option<String> {
        let data = STANDARD.decode(sealed.as_bytes()).ok()?;
        let plain = (|| {
            let mut decrypter = openssl::encrypt::Decrypter::new(&self.key)?;
            decrypter.set_rsa_padding(openssl::rsa::Padding::PKCS1_OAEP)?;
            let mut out = vec![0u8; decrypter.decrypt_len(&data)?];
            let len = decrypter.decrypt(&data, &mut out)?;
            out.truncate(len);
            Ok::<_, openssl::error::ErrorStack>(out)
        })()
        .ok()?;
        String::from_utf8(plain).ok()
    }

    /// `plaintext` sealed under this key's public half as a merchant seals a sensitive field.
    #[cfg(test)]
    pub(crate) fn encrypt_sensitive(&self, plaintext: &str) -> String {
        let public = PKey::public_key_from_pem(self.public_pem.as_bytes()).expect("own public key");
        let mut encrypter = openssl::encrypt::Encrypter::new(&public).expect("encrypter");
        encrypter.set_rsa_padding(openssl::rsa::Padding::PKCS1_OAEP).expect("padding");
        let mut out = vec![0u8; encrypter.encrypt_len(plaintext.as_bytes()).expect("length")];
        let len = encrypter.encrypt(plaintext.as_bytes(), &mut out).expect("encrypted");
        out.truncate(len);
        STANDARD.encode(out)
    }
}

/// What the sandbox issues to a merchant: a private key, a certificate for it, an APIv3 key.
pub(crate) struct IssuedMerchantKeys {
    pub(crate) private_key_pem: String,
    pub(crate) certificate_pem: String,
    pub(crate) serial_no: String,
    pub(crate) not_after: chrono::DateTime<chrono::Utc>,
    pub(crate) public_key: PKey<Public>,
    pub(crate) api_v3_key: String,
}

/// A fresh RSA-2048 merchant key and a certificate for it (serial as the platform writes it:
/// upper-case hex; valid from now for one year), plus a 32-character APIv3 key.
pub(crate) fn issue_merchant_keys(mchid: &str) -> Result<IssuedMerchantKeys, String> {
    let failed = |e: openssl::error::ErrorStack| format!("certificate generation failed: {e}");
    let key = rsa_key()?;
    // 20 random bytes, first one in 0x10..0x7f: positive and always 40 hex digits.
    let mut serial_bytes = [0u8; 20];
    rand::rng().fill(&mut serial_bytes[..]);
    serial_bytes[0] = 0x10 + serial_bytes[0] % 0x6f;
    let serial_bn = BigNum::from_slice(&serial_bytes).map_err(failed)?;
    let serial_no = serial_bn.to_hex_str().map_err(failed)?.to_uppercase();
    let now = chrono::Utc::now();
    let not_after = now + chrono::Duration::days(365);
    let mut name = X509NameBuilder::new().map_err(failed)?;
    name.append_entry_by_text("C", "CN").map_err(failed)?;
    name.append_entry_by_text("O", "Atrium sandbox pay platform").map_err(failed)?;
    name.append_entry_by_text("OU", "Atrium sandbox pay platform CA").map_err(failed)?;
    name.append_entry_by_text("CN", mchid).map_err(failed)?;
    let name = name.build();
    let mut cert = X509::builder().map_err(failed)?;
    cert.set_version(2).map_err(failed)?;
    let serial = Asn1Integer::from_bn(&serial_bn).map_err(failed)?;
    cert.set_serial_number(&serial).map_err(failed)?;
    cert.set_subject_name(&name).map_err(failed)?;
    cert.set_issuer_name(&name).map_err(failed)?;
    cert.set_pubkey(&key).map_err(failed)?;
    let (from, until) =
        (Asn1Time::from_unix(now.timestamp() - 60).map_err(failed)?, Asn1Time::from_unix(not_after.timestamp()).map_err(failed)?);
    cert.set_not_before(&from).map_err(failed)?;
    cert.set_not_after(&until).map_err(failed)?;
    cert.sign(&key, MessageDigest::sha256()).map_err(failed)?;
    let cert = cert.build();
    let pem = |bytes: Result<Vec<u8>, openssl::error::ErrorStack>| {
        bytes.map_err(failed).and_then(|b| String::from_utf8(b).map_err(|_| "PEM encoding failed".to_owned()))
    };
    let public_key = PKey::public_key_from_der(&key.public_key_to_der().map_err(failed)?).map_err(failed)?;
    Ok(IssuedMerchantKeys {
        private_key_pem: pem(key.private_key_to_pem_pkcs8())?,
        certificate_pem: pem(cert.to_pem())?,
        serial_no,
        not_after: chrono::DateTime::from_timestamp(not_after.timestamp(), 0).unwrap_or(not_after),
        public_key,
        api_v3_key: random_chars(32, ALNUM),
    })
}

/// The fields of a signed request's `Authorization` header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Authorization {
    pub(crate) mchid: String,
    pub(crate) nonce: String,
    pub(crate) timestamp: String,
    pub(crate) serial_no: String,
    pub(crate) signature: String,
}

/// Reads `WECHATPAY2-SHA256-RSA2048 mchid="…",nonce_str="…",timestamp="…",serial_no="…",signature="…"`.
pub(crate) fn parse_authorization(header: &str) -> Result<Authorization, String> {
    let rest = header
        .trim()
        .strip_prefix(AUTH_SCHEME)
        .filter(|r| r.starts_with(' '))
        .ok_or_else(|| format!("the Authorization scheme must be {AUTH_SCHEME}"))?;
    let mut fields = std::collections::HashMap::new();
    for pair in rest.trim().split(',') {
        let (k, v) = pair.split_once('=').ok_or("the Authorization header is malformed")?;
        let v = v.trim();
        let v = v.strip_prefix('"').and_then(|v| v.strip_suffix('"')).unwrap_or(v);
        fields.insert(k.trim().to_owned(), v.to_owned());
    }
    let mut take = |k: &str| fields.remove(k).filter(|v| !v.is_empty()).ok_or_else(|| format!("the Authorization header has no {k}"));
    Ok(Authorization {
        mchid: take("mchid")?,
        nonce: take("nonce_str")?,
        timestamp: take("timestamp")?,
        serial_no: take("serial_no")?,
        signature: take("signature")?,
    })
}

/// Checks a request signature: timestamp within 300 s of `now`, SHA256withRSA by `key` over
/// `METHOD\nPATH_AND_QUERY\nTIMESTAMP\nNONCE\nBODY\n`.
pub(crate) fn verify_request(
    key: &PKey<Public>,
    auth: &Authorization,
    method: &str,
    path_and_query: &str,
    body: &[u8],
    now: i64,
) -> Result<(), String> {
    let ts: i64 = auth.timestamp.parse().map_err(|_| "the timestamp is not a number".to_owned())?;
    if now.abs_diff(ts) >= MAX_CLOCK_SKEW_SECS as u64 {
        return Err("the timestamp is 300 s or more away from now".into());
    }
    let signature = STANDARD.decode(auth.signature.as_bytes()).map_err(|_| "the signature is not base64".to_owned())?;
    let mut message = format!("{method}\n{path_and_query}\n{}\n{}\n", auth.timestamp, auth.nonce).into_bytes();
    message.extend_from_slice(body);
    message.push(b'\n');
    if verify(key, &message, &signature) { Ok(()) } else { Err("the signature does not verify".into()) }
}

/// Checks a mini-program `paySign` over `appId\ntimeStamp\nnonceStr\npackage\n`.
pub(crate) fn verify_pay_sign(key: &PKey<Public>, app_id: &str, time_stamp: &str, nonce_str: &str, package: &str, pay_sign: &str) -> bool {
    let Ok(signature) = STANDARD.decode(pay_sign.as_bytes()) else { return false };
    verify(key, format!("{app_id}\n{time_stamp}\n{nonce_str}\n{package}\n").as_bytes(), &signature)
}

fn verify(key: &PKey<Public>, message: &[u8], signature: &[u8]) -> bool {
    (|| {
        let mut verifier = Verifier::new(MessageDigest::sha256(), key)?;
        verifier.update(message)?;
        verifier.verify(signature)
    })()
    .unwrap_or(false)
}

/// AEAD_AES_256_GCM under the 32-byte APIv3 key: base64 of ciphertext ‖ 16-byte tag.
pub(crate) fn encrypt_resource(api_v3_key: &[u8], nonce: &[u8], associated_data: &[u8], plaintext: &[u8]) -> Result<String, String> {
    let mut tag = [0u8; GCM_TAG_LEN];
    let mut data = encrypt_aead(Cipher::aes_256_gcm(), api_v3_key, Some(nonce), associated_data, plaintext, &mut tag)
        .map_err(|e| format!("resource encryption failed: {e}"))?;
    data.extend_from_slice(&tag);
    Ok(STANDARD.encode(data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::symm::decrypt_aead;

    #[test]
    fn a_platform_key_id_has_the_platforms_shape() {
        let pair = PlatformKeyPair::generate().unwrap();
        assert!(pair.id.starts_with("PUB_KEY_ID_0114232"), "{}", pair.id);
        assert_eq!(pair.id.len(), "PUB_KEY_ID_".len() + 34);
        assert!(pair.id["PUB_KEY_ID_".len()..].bytes().all(|b| b.is_ascii_digit()));
        assert!(pair.public_pem.starts_with("-----BEGIN PUBLIC KEY-----"));
    }

    #[test]
    fn an_issued_certificate_names_the_serial_holds_the_key_and_lasts_a_year() {
        let issued = issue_merchant_keys("1900000109").unwrap();
        let cert = X509::from_pem(issued.certificate_pem.as_bytes()).unwrap();
        let serial = cert.serial_number().to_bn().unwrap().to_hex_str().unwrap().to_uppercase();
        assert_eq!(serial, issued.serial_no);
        assert_eq!(serial.len(), 40);
        let key = PKey::private_key_from_pem(issued.private_key_pem.as_bytes()).unwrap();
        assert!(cert.public_key().unwrap().public_eq(&key));
        assert!(issued.private_key_pem.starts_with("-----BEGIN PRIVATE KEY-----"));
        let days = (issued.not_after - chrono::Utc::now()).num_days();
        assert!((364..=365).contains(&days), "{days}");
        assert_eq!(issued.api_v3_key.len(), 32);
    }

    #[test]
    fn a_request_signed_by_the_merchant_verifies_and_a_changed_one_does_not() {
        let issued = issue_merchant_keys("1900000109").unwrap();
        let key = PKey::private_key_from_pem(issued.private_key_pem.as_bytes()).unwrap();
        let now = chrono::Utc::now().timestamp();
        let message = format!("POST\n/v3/pay/transactions/jsapi\n{now}\nN1\n{{}}\n");
        let header = format!(
            "{AUTH_SCHEME} mchid=\"1900000109\",nonce_str=\"N1\",timestamp=\"{now}\",serial_no=\"{}\",signature=\"{}\"",
            issued.serial_no,
            sign(&key, message.as_bytes()).unwrap()
        );
        let auth = parse_authorization(&header).unwrap();
        assert_eq!(auth.mchid, "1900000109");
        verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{}", now).unwrap();
        assert!(verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{ }", now).is_err());
        assert!(verify_request(&issued.public_key, &auth, "GET", "/v3/pay/transactions/jsapi", b"{}", now).is_err());
        // The window, to the second, on a fixed clock: 299 s either way is in, 300 s is out.
        verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{}", now + 299).unwrap();
        verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{}", now - 299).unwrap();
        assert!(verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{}", now + 300).is_err());
        assert!(verify_request(&issued.public_key, &auth, "POST", "/v3/pay/transactions/jsapi", b"{}", now - 300).is_err());
        assert!(parse_authorization(&header.replace(AUTH_SCHEME, "Bearer")).is_err());
        assert!(parse_authorization(&header.replace("nonce_str=\"N1\",", "")).is_err());
    }

    #[test]
    fn a_resource_decrypts_with_the_tag_taken_from_the_end() {
        let key = b"0123456789abcdef0123456789abcdef";
        let sealed = encrypt_resource(key, b"nonce1234567", b"transaction", b"{\"a\":1}").unwrap();
        let data = STANDARD.decode(sealed).unwrap();
        let (ct, tag) = data.split_at(data.len() - GCM_TAG_LEN);
        let plain = decrypt_aead(Cipher::aes_256_gcm(), key, Some(b"nonce1234567"), b"transaction", ct, tag).unwrap();
        assert_eq!(plain, b"{\"a\":1}");
    }
}
