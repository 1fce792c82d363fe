use atrium_kernel::{Error, Id};
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

/// The claims of an access token.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AccessClaims {
    /// The issuer, [`IdentityConfig::issuer`](crate::IdentityConfig::issuer).
    pub iss: String,
    /// The audience, [`IdentityConfig::audience`](crate::IdentityConfig::audience).
    pub aud: String,
    /// The user id, as a string (RFC 7519).
    pub sub: String,
    /// The session id; the token is good only while this session is live.
    pub sid: String,
    /// When it was issued, Unix seconds.
    pub iat: i64,
    /// When it expires, Unix seconds.
    pub exp: i64,
}

/// HS256 for `jsonwebtoken`, computed with the `hmac` and `sha2` crates. The crate's own
/// RustCrypto provider would also compile RSA, ECDSA and EdDSA, which no token here uses; this
/// one refuses every other algorithm and key.
mod hs256 {
    use hmac::{Hmac, Mac};
    use jsonwebtoken::crypto::{CryptoProvider, JwtSigner, JwtVerifier, KeyUtils};
    use jsonwebtoken::errors::{ErrorKind, Result};
    use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, EncodingKey};
    use sha2::Sha256;

    pub(super) static PROVIDER: CryptoProvider =
        CryptoProvider { signer_factory: signer, verifier_factory: verifier, key_utils: KeyUtils::new_unimplemented() };

    struct Hs256(Hmac<Sha256>);

    fn hs256(alg: &Algorithm, family: AlgorithmFamily, key: Result<&[u8]>) -> Result<Hs256> {
        if *alg != Algorithm::HS256 || family != AlgorithmFamily::Hmac {
            return Err(ErrorKind::InvalidAlgorithm.into());
        }
        Ok(Hs256(Hmac::new_from_slice(key?).map_err(|_| ErrorKind::InvalidKeyFormat)?))
    }

    fn signer(alg: &Algorithm, key: &EncodingKey) -> Result<Box<dyn JwtSigner>> {
        Ok(Box::new(hs256(alg, key.family(), Ok(key.as_bytes()))?))
    }

    fn verifier(alg: &Algorithm, key: &DecodingKey) -> Result<Box<dyn JwtVerifier>> {
        Ok(Box::new(hs256(alg, key.family(), key.try_get_as_bytes())?))
    }

    impl signature::Signer<Vec<u8>> for Hs256 {
        fn try_sign(&self, msg: &[u8]) -> std::result::Result<Vec<u8>, signature::Error> {
            let mut mac = self.0.clone();
            mac.update(msg);
            Ok(mac.finalize().into_bytes().to_vec())
        }
    }

    impl signature::Verifier<Vec<u8>> for Hs256 {
        /// In constant time (`verify_slice`).
        fn verify(&self, msg: &[u8], sig: &Vec<u8>) -> std::result::Result<(), signature::Error> {
            let mut mac = self.0.clone();
            mac.update(msg);
            mac.verify_slice(sig).map_err(|_| signature::Error::new())
        }
    }

    impl JwtSigner for Hs256 {
        fn algorithm(&self) -> Algorithm {
            Algorithm::HS256
        }
    }

    impl JwtVerifier for Hs256 {
        fn algorithm(&self) -> Algorithm {
            Algorithm::HS256
        }
    }
}

/// Signs and verifies access tokens: HS256 only, issuer and audience checked.
pub(crate) struct TokenKeys {
    encoding: EncodingKey,
    decoding: DecodingKey,
    validation: Validation,
}

impl TokenKeys {
    /// Clock skew tolerated between instances.
    const LEEWAY_SECS: i64 = 5;

    pub(crate) fn new(secret: &[u8], issuer: &str, audience: &str) -> Self {
        // The process's provider for `jsonwebtoken`; once installed (by this or by an embedding
        // program), installing again changes nothing.
        let _ = hs256::PROVIDER.install_default();
        let mut validation = Validation::new(Algorithm::HS256);
        validation.set_issuer(&[issuer]);
        validation.set_audience(&[audience]);
        validation.set_required_spec_claims(&["exp", "iat", "iss", "aud", "sub"]);
        // Expiry is checked against the service's Clock port below, not the system clock,
        // so one notion of time governs tokens, sessions and tests.
        validation.validate_exp = false;
        validation.leeway = 0;
        TokenKeys { encoding: EncodingKey::from_secret(secret), decoding: DecodingKey::from_secret(secret), validation }
    }

    pub(crate) fn sign(&self, claims: &AccessClaims) -> Result<String, Error> {
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &self.encoding)
            .map_err(|e| Error::Internal(anyhow::anyhow!("cannot sign access token: {e}")))
    }

    /// Any failure (signature, algorithm, expiry, issuer, audience, shape) is one 401.
    pub(crate) fn verify(&self, token: &str, now: i64) -> Result<(Id, AccessClaims), Error> {
        let data = jsonwebtoken::decode::<AccessClaims>(token, &self.decoding, &self.validation)
            .map_err(|_| Error::Unauthenticated("invalid or expired access token".into()))?;
        if data.claims.exp <= now - Self::LEEWAY_SECS {
            return Err(Error::Unauthenticated("invalid or expired access token".into()));
        }
        let user_id = data.claims.sub.parse::<Id>().map_err(|_| Error::Unauthenticated("invalid or expired access token".into()))?;
        Ok((user_id, data.claims))
    }
}

pub use atrium_kernel::secret::{hash_secret, random_token};

/// Keyed hash of a low-entropy secret (a 6-digit code) so a leaked table does not reveal
/// codes: HMAC-SHA256 under the server's key over target, purpose and code, each
/// length-prefixed so no two different triples share an input.
pub(crate) fn hash_code(key: &[u8], target: &str, purpose: &str, code: &str) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(key).expect("HMAC takes a key of any length");
    for part in [target, purpose, code] {
        mac.update(&(part.len() as u64).to_be_bytes());
        mac.update(part.as_bytes());
    }
    hex::encode(mac.finalize().into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys() -> TokenKeys {
        TokenKeys::new(b"0123456789abcdef0123456789abcdef", "atrium", "atrium-api")
    }

    fn claims(exp_offset: i64) -> AccessClaims {
        let now = chrono::Utc::now().timestamp();
        AccessClaims { iss: "atrium".into(), aud: "atrium-api".into(), sub: "42".into(), sid: "s1".into(), iat: now, exp: now + exp_offset }
    }

    #[test]
    fn a_signed_token_verifies() {
        let k = keys();
        let token = k.sign(&claims(60)).unwrap();
        let (uid, c) = k.verify(&token, chrono::Utc::now().timestamp()).unwrap();
        assert_eq!((uid, c.sid.as_str()), (42, "s1"));
    }

    #[test]
    fn an_expired_token_is_rejected() {
        let k = keys();
        let token = k.sign(&claims(-120)).unwrap();
        assert!(matches!(k.verify(&token, chrono::Utc::now().timestamp()), Err(Error::Unauthenticated(_))));
    }

    #[test]
    fn a_token_signed_with_another_key_is_rejected() {
        let other = TokenKeys::new(b"another-secret-another-secret-xx", "atrium", "atrium-api");
        let token = other.sign(&claims(60)).unwrap();
        assert!(keys().verify(&token, chrono::Utc::now().timestamp()).is_err());
    }

    #[test]
    fn alg_none_is_rejected() {
        use base64::Engine;
        let b64 = |s: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s);
        let body = serde_json::to_string(&claims(60)).unwrap();
        let token = format!("{}.{}.", b64(r#"{"alg":"none","typ":"JWT"}"#), b64(&body));
        assert!(keys().verify(&token, chrono::Utc::now().timestamp()).is_err());
    }

    #[test]
    fn a_token_of_another_hmac_algorithm_is_rejected() {
        let k = keys();
        let key = EncodingKey::from_secret(b"0123456789abcdef0123456789abcdef");
        // The provider refuses to sign it at all; one made elsewhere does not verify.
        assert!(jsonwebtoken::encode(&Header::new(Algorithm::HS512), &claims(60), &key).is_err());
        let token = k.sign(&claims(60)).unwrap();
        let (head, rest) = token.split_once('.').unwrap();
        use base64::Engine;
        let b64 = base64::engine::general_purpose::URL_SAFE_NO_PAD;
        let header = String::from_utf8(b64.decode(head).unwrap()).unwrap().replace("HS256", "HS512");
        let forged = format!("{}.{rest}", b64.encode(header));
        assert!(k.verify(&forged, chrono::Utc::now().timestamp()).is_err());
        assert!(k.verify(&token, chrono::Utc::now().timestamp()).is_ok());
    }

    #[test]
    fn a_token_for_another_audience_is_rejected() {
        let mut c = claims(60);
        c.aud = "someone-else".into();
        let token = keys().sign(&c).unwrap();
        assert!(keys().verify(&token, chrono::Utc::now().timestamp()).is_err());
    }

    #[test]
    fn code_hashes_depend_on_every_part() {
        let base = hash_code(b"k", "t", "login", "123456");
        assert_ne!(base, hash_code(b"k2", "t", "login", "123456"));
        assert_ne!(base, hash_code(b"k", "t2", "login", "123456"));
        assert_ne!(base, hash_code(b"k", "t", "register", "123456"));
        assert_ne!(base, hash_code(b"k", "t", "login", "123457"));
    }
}
