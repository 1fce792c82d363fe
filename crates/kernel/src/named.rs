//! Enums named on the wire and at rest by their snake_case variant names.

/// An enum's stored and wire name, and back. Derive strum's `IntoStaticStr` and `EnumString`
/// with `#[strum(serialize_all = "snake_case")]` (the names serde uses too) and this trait
/// gives `as_str()` and `parse()`, so no enum spells its names out twice by hand.
pub trait StrEnum: Copy + Into<&'static str> + std::str::FromStr {
    /// The variant's snake_case name, as stored and sent.
    fn as_str(self) -> &'static str {
        self.into()
    }

    /// `None` for a name no variant has.
    fn parse(s: &str) -> Option<Self> {
        s.parse().ok()
    }
}

impl<T: Copy + Into<&'static str> + std::str::FromStr> StrEnum for T {}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{PartyType, UserStatus};

    #[test]
    fn names_round_trip_and_match_serde() {
        for t in [PartyType::Platform, PartyType::Partner, PartyType::Tenant] {
            assert_eq!(PartyType::parse(t.as_str()), Some(t));
            assert_eq!(serde_json::to_value(t).ok(), Some(serde_json::Value::from(t.as_str())));
        }
        assert_eq!(UserStatus::parse("disabled"), Some(UserStatus::Disabled));
        assert_eq!(UserStatus::parse("Disabled"), None);
    }
}
