//! Inspection of uploaded key material with OpenSSL: the merchant private key (PEM, PKCS#8 or
//! PKCS#1, RSA ≥ 2048), the merchant certificate (PEM X.509: serial, expiry, key) and the
//! platform key (PEM public key or certificate). Every error names the upload part and never
//! repeats its content.
use super::sign::public_key_from_pem;
use atrium_kernel::{Error, Result, Timestamp};
use atrium_payments::{CertInfo, KeyInfo, MerchantKeys, Secret};
use openssl::asn1::Asn1Time;
use openssl::pkey::{HasPublic, PKey, PKeyRef};
use openssl::x509::X509;

/// RSA keys shorter than this are refused.
pub const MIN_RSA_BITS: u32 = 2048;

/// [`MerchantKeys`] over OpenSSL.
#[derive(Debug, Default, Clone, Copy)]
pub struct OpensslMerchantKeys;

fn is_pem(s: &str) -> bool {
    s.contains("-----BEGIN ")
}

/// Bits and fingerprint of an RSA public half; `part` names the upload part in errors.
fn rsa_info<T: HasPublic>(key: &PKeyRef<T>, part: &str) -> Result<KeyInfo> {
    let rsa = key.rsa().map_err(|_| Error::invalid(part, "must be an RSA key"))?;
    let bits = rsa.size() * 8;
    if bits < MIN_RSA_BITS {
        return Err(Error::invalid(part, format!("must be an RSA key of at least {MIN_RSA_BITS} bits (this one has {bits})")));
    }
    let der = key.public_key_to_der().map_err(|_| Error::invalid(part, "has an unreadable public key"))?;
    Ok(KeyInfo { fingerprint: hex::encode(openssl::sha::sha256(&der)), bits })
}

/// An ASN.1 time as a UTC timestamp.
fn to_timestamp(t: &openssl::asn1::Asn1TimeRef) -> Option<Timestamp> {
    let epoch = Asn1Time::from_unix(0).ok()?;
    let diff = epoch.diff(t).ok()?;
    chrono::DateTime::from_timestamp(i64::from(diff.days) * 86_400 + i64::from(diff.secs), 0)
}

impl MerchantKeys for OpensslMerchantKeys {
    fn inspect_private_key(&self, pem: &Secret) -> Result<KeyInfo> {
        const PART: &str = "private_key";
        if !is_pem(pem.expose()) {
            return Err(Error::invalid(PART, "is not a PEM file"));
        }
        let key = PKey::private_key_from_pem(pem.expose().as_bytes())
            .map_err(|_| Error::invalid(PART, "is not a readable PEM private key (PKCS#8 or PKCS#1, unencrypted)"))?;
        rsa_info(&key, PART)
    }

    fn inspect_certificate(&self, pem: &str, now: Timestamp) -> Result<CertInfo> {
        const PART: &str = "certificate";
        if !is_pem(pem) {
            return Err(Error::invalid(PART, "is not a PEM file"));
        }
        let cert = X509::from_pem(pem.as_bytes()).map_err(|_| Error::invalid(PART, "is not a readable PEM X.509 certificate"))?;
        let key = cert.public_key().map_err(|_| Error::invalid(PART, "has an unreadable public key"))?;
        let info = rsa_info(&key, PART)?;
        let serial_no = cert
            .serial_number()
            .to_bn()
            .and_then(|bn| bn.to_hex_str().map(|s| s.to_string()))
            .map_err(|_| Error::invalid(PART, "has an unreadable serial number"))?
            .to_uppercase();
        let not_after = to_timestamp(cert.not_after()).ok_or_else(|| Error::invalid(PART, "has an unreadable expiry date"))?;
        if not_after <= now {
            return Err(Error::invalid(PART, format!("expired on {}", not_after.to_rfc3339())));
        }
        Ok(CertInfo { serial_no, not_after, key_fingerprint: info.fingerprint })
    }

    fn inspect_platform_key(&self, pem: &str) -> Result<KeyInfo> {
        const PART: &str = "platform_public_key";
        if !is_pem(pem) {
            return Err(Error::invalid(PART, "is not a PEM file"));
        }
        let key = public_key_from_pem(pem).ok_or_else(|| Error::invalid(PART, "is neither a PEM public key nor a PEM certificate"))?;
        rsa_info(&key, PART)
    }
}
