use atrium_kernel::secret::{hash_secret, random_token};

/// Every API token starts with this, so it is recognisable (e.g. by secret scanners).
pub const TOKEN_PREFIX: &str = "atd_";

/// Random bytes behind a token: 256 bits.
const TOKEN_BYTES: usize = 32;
/// base64url without padding of 32 bytes.
const ENCODED_LEN: usize = 43;

/// A new token value: the prefix and 32 CSPRNG bytes, base64url.
pub(crate) fn generate() -> String {
    format!("{TOKEN_PREFIX}{}", random_token(TOKEN_BYTES))
}

/// Whether `raw` has a token's shape; anything else is refused without a lookup.
pub(crate) fn well_formed(raw: &str) -> bool {
    raw.strip_prefix(TOKEN_PREFIX)
        .is_some_and(|rest| rest.len() == ENCODED_LEN && rest.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'))
}

/// SHA-256 of a token value, hex: what is stored and looked up. A plain hash suits a
/// 256-bit random secret; a slow hash would add nothing but latency.
pub fn hash_token(raw: &str) -> String {
    hash_secret(raw)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_tokens_are_well_formed_and_differ() {
        let a = generate();
        assert!(well_formed(&a), "{a}");
        assert_eq!(a.len(), TOKEN_PREFIX.len() + ENCODED_LEN);
        assert_ne!(a, generate());
    }

    #[test]
    fn other_shapes_are_not_tokens() {
        let good = generate();
        for bad in
            ["", "atd_", "atd_short", &good[1..], &format!("{good}x"), &good.replace("atd_", "xyz_"), &format!("atd_{}", "!".repeat(43))]
        {
            assert!(!well_formed(bad), "{bad}");
        }
    }

    #[test]
    fn the_hash_is_sha256_hex() {
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    }
}
