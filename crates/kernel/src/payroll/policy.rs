use super::rate::Rate;
use crate::{Error, FieldError, Money};
use serde::{Deserialize, Serialize};

/// A tenant's social-insurance and housing-fund rules (API field `payroll_policy`).
///
/// Amounts are fen; rates are decimal strings on the wire. Rates are already in `[0, 1)` by
/// construction of [`Rate`]; [`PayrollPolicy::validate`] checks the amounts and their order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(deny_unknown_fields)]
pub struct PayrollPolicy {
    /// Lowest social-insurance contribution base.
    pub si_base_floor: Money,
    /// Highest social-insurance contribution base.
    pub si_base_cap: Money,
    /// Lowest housing-fund contribution base.
    pub hf_base_floor: Money,
    /// Highest housing-fund contribution base.
    pub hf_base_cap: Money,
    /// Added to the medical contribution every month (Beijing: 3 yuan).
    pub medical_fixed: Money,
    /// The employee's pension insurance rate on the social-insurance base (Beijing: 8 %).
    pub pension_rate: Rate,
    /// The employee's medical insurance rate on the social-insurance base (Beijing: 2 %).
    pub medical_rate: Rate,
    /// The employee's unemployment insurance rate on the social-insurance base (Beijing: 0.5 %).
    pub unemployment_rate: Rate,
    /// Four-eyes approval: the user who approves a sheet must not be the one who calculated
    /// it. On unless the tenant's partner or the platform turns it off (the tenant may not).
    #[serde(default = "four_eyes_default")]
    pub four_eyes: bool,
}

fn four_eyes_default() -> bool {
    true
}

impl Default for PayrollPolicy {
    /// Beijing 2025: bases 7,162.00–35,811.00 yuan for both insurance and housing fund,
    /// pension 8 %, medical 2 % + 3.00 yuan, unemployment 0.5 %.
    fn default() -> Self {
        PayrollPolicy {
            si_base_floor: Money::from_fen(716_200),
            si_base_cap: Money::from_fen(3_581_100),
            hf_base_floor: Money::from_fen(716_200),
            hf_base_cap: Money::from_fen(3_581_100),
            medical_fixed: Money::from_fen(300),
            pension_rate: Rate::from_ppm_const(80_000),
            medical_rate: Rate::from_ppm_const(20_000),
            unemployment_rate: Rate::from_ppm_const(5_000),
            four_eyes: true,
        }
    }
}

impl PayrollPolicy {
    /// Checks every amount is an input amount (`0..=Money::MAX_INPUT`) and each floor is at
    /// most its cap; the error names every offending field.
    pub fn validate(&self) -> Result<(), Error> {
        let mut problems = Vec::new();
        let amounts = [
            ("si_base_floor", self.si_base_floor),
            ("si_base_cap", self.si_base_cap),
            ("hf_base_floor", self.hf_base_floor),
            ("hf_base_cap", self.hf_base_cap),
            ("medical_fixed", self.medical_fixed),
        ];
        for (field, amount) in amounts {
            if let Err(message) = amount.check_input() {
                problems.push(FieldError::new(field, message));
            }
        }
        if self.si_base_floor > self.si_base_cap {
            problems.push(FieldError::new("si_base_floor", "must not exceed si_base_cap"));
        }
        if self.hf_base_floor > self.hf_base_cap {
            problems.push(FieldError::new("hf_base_floor", "must not exceed hf_base_cap"));
        }
        if problems.is_empty() { Ok(()) } else { Err(Error::Invalid(problems)) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(err: Error) -> Vec<String> {
        match err {
            Error::Invalid(problems) => problems.into_iter().map(|p| p.field).collect(),
            other => panic!("expected Invalid, got {other:?}"),
        }
    }

    #[test]
    fn the_default_policy_is_beijing_2025_and_valid() {
        let policy = PayrollPolicy::default();

        assert_eq!(policy.validate().ok(), Some(()));
        assert_eq!(policy.si_base_floor.to_string(), "7162.00");
        assert_eq!(policy.hf_base_cap.to_string(), "35811.00");
        assert_eq!(policy.medical_fixed.to_string(), "3.00");
        assert_eq!(policy.unemployment_rate.to_string(), "0.005");
    }

    #[test]
    fn a_floor_above_its_cap_is_rejected_naming_the_floor() {
        let policy =
            PayrollPolicy { si_base_floor: Money::from_yuan(40_000), hf_base_floor: Money::from_yuan(40_000), ..PayrollPolicy::default() };

        let err = policy.validate().unwrap_err();

        assert_eq!(fields(err), ["si_base_floor", "hf_base_floor"]);
    }

    #[test]
    fn negative_amounts_are_rejected_naming_each_field() {
        let policy = PayrollPolicy { medical_fixed: Money::from_fen(-1), si_base_floor: Money::from_fen(-1), ..PayrollPolicy::default() };

        let err = policy.validate().unwrap_err();

        assert_eq!(fields(err), ["si_base_floor", "medical_fixed"]);
    }

    #[test]
    fn amounts_above_the_input_bound_are_rejected_naming_each_field() {
        let policy =
            PayrollPolicy { si_base_cap: Money::from_fen(i64::MAX), hf_base_cap: Money::from_fen(i64::MAX), ..PayrollPolicy::default() };

        let err = policy.validate().unwrap_err();

        assert_eq!(fields(err), ["si_base_cap", "hf_base_cap"]);
        let json = serde_json::json!({"si_base_floor": 0, "si_base_cap": 9_223_372_036_854_775_807_i64, "hf_base_floor": 0,
            "hf_base_cap": 1, "medical_fixed": 0, "pension_rate": "0.08", "medical_rate": "0.02", "unemployment_rate": "0.005"});
        assert!(serde_json::from_value::<PayrollPolicy>(json).is_err());
    }

    #[test]
    fn a_policy_round_trips_through_json_with_rates_as_strings() {
        let policy = PayrollPolicy::default();

        let json = serde_json::to_value(policy).unwrap();
        let back: PayrollPolicy = serde_json::from_value(json.clone()).unwrap();

        assert_eq!(json["pension_rate"], "0.08");
        assert_eq!(json["si_base_cap"], 3_581_100);
        assert_eq!(back, policy);
    }
}
