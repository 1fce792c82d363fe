//! Bounded strings of the order requests: text the pay platform counts in bytes (an order's
//! subject becomes the platform's description, a refund's reason is shown to the payer), and
//! the payer's openid — the kernel's [`ByteText`] and [`Openid`], which payments share.
pub use atrium_kernel::{ByteText, Openid};

/// An order's subject: 1–127 bytes, the pay platform's limit for a description.
pub type Subject = ByteText<127, false>;
/// A refund's reason, shown to the payer: up to 80 bytes.
pub type RefundReason = ByteText<80, true>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_subject_counts_bytes_not_characters_and_is_trimmed() {
        // 42 three-byte characters = 126 bytes; one more is 129.
        assert!(Subject::parse(&"支".repeat(42)).is_ok());
        assert!(Subject::parse(&"支".repeat(43)).unwrap_err().contains("127 bytes"));
        assert_eq!(Subject::parse("  Coffee  ").unwrap().as_str(), "Coffee");
        for bad in ["", "   ", "a\nb", "a\u{202E}b"] {
            assert!(Subject::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn a_reason_may_be_empty_and_holds_80_bytes() {
        assert_eq!(RefundReason::parse("").unwrap().as_str(), "");
        assert!(RefundReason::parse(&"a".repeat(80)).is_ok());
        assert!(RefundReason::parse(&"a".repeat(81)).is_err());
    }

    #[test]
    fn an_openid_is_1_to_128_of_the_allowed_characters() {
        assert!(Openid::parse("oUpF8uMuAJO_M2pxb1Q9zNjWeS6o").is_ok());
        assert!(Openid::parse(&"o".repeat(128)).is_ok());
        for bad in ["", &"o".repeat(129), "o 1", "o*1", "订单"] {
            assert!(Openid::parse(bad).is_err(), "{bad:?}");
        }
    }
}
