use crate::{Money, Period};
use serde::{Deserialize, Serialize};

/// The kinds of special additional deduction (专项附加扣除) an employee can declare.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum DeductionKind {
    /// Children's education (子女教育).
    ChildrenEducation,
    /// Care of infants under three (3岁以下婴幼儿照护).
    InfantCare,
    /// Support of elderly parents (赡养老人).
    ElderlySupport,
    /// The employee's own continuing education (继续教育).
    ContinuingEducation,
    /// Interest on a first-home loan (住房贷款利息).
    HousingLoan,
    /// Housing rent (住房租金).
    HousingRent,
}

/// One declared special additional deduction: `monthly_amount` in every month from `from`
/// through `to` (open-ended when `to` is absent).
///
/// The engine does not check the amount against the statutory standards (they change, and
/// a child's share can be split between parents); the service may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(try_from = "RawSpecialDeduction")]
pub struct SpecialDeduction {
    kind: DeductionKind,
    monthly_amount: Money,
    from: Period,
    to: Option<Period>,
}

impl SpecialDeduction {
    /// Fails when the amount is not an input amount (negative or above `Money::MAX_INPUT`)
    /// or `to` is before `from`.
    pub fn new(kind: DeductionKind, monthly_amount: Money, from: Period, to: Option<Period>) -> Result<SpecialDeduction, String> {
        if let Err(message) = monthly_amount.check_input() {
            return Err(format!("monthly_amount {message}"));
        }
        if to.is_some_and(|to| to < from) {
            return Err("to must not be before from".into());
        }
        Ok(SpecialDeduction { kind, monthly_amount, from, to })
    }

    /// Which deduction this is.
    pub fn kind(&self) -> DeductionKind {
        self.kind
    }

    /// The amount deducted in each month it covers.
    pub fn monthly_amount(&self) -> Money {
        self.monthly_amount
    }

    /// The first month it covers.
    pub fn from(&self) -> Period {
        self.from
    }

    /// The last month it covers; `None` while it runs on.
    pub fn to(&self) -> Option<Period> {
        self.to
    }
}

#[derive(Deserialize)]
struct RawSpecialDeduction {
    kind: DeductionKind,
    monthly_amount: Money,
    from: Period,
    #[serde(default)]
    to: Option<Period>,
}

impl TryFrom<RawSpecialDeduction> for SpecialDeduction {
    type Error = String;
    fn try_from(raw: RawSpecialDeduction) -> Result<SpecialDeduction, String> {
        SpecialDeduction::new(raw.kind, raw.monthly_amount, raw.from, raw.to)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deduction_kinds_are_snake_case_on_the_wire() {
        let kinds = [
            (DeductionKind::ChildrenEducation, "\"children_education\""),
            (DeductionKind::InfantCare, "\"infant_care\""),
            (DeductionKind::ElderlySupport, "\"elderly_support\""),
            (DeductionKind::ContinuingEducation, "\"continuing_education\""),
            (DeductionKind::HousingLoan, "\"housing_loan\""),
            (DeductionKind::HousingRent, "\"housing_rent\""),
        ];

        for (kind, json) in kinds {
            assert_eq!(serde_json::to_string(&kind).unwrap(), json);
        }
    }

    #[test]
    fn a_special_deduction_parses_from_the_api_shape_with_optional_to() {
        let json = r#"{"kind":"housing_rent","monthly_amount":150000,"from":"2025-03"}"#;

        let deduction: SpecialDeduction = serde_json::from_str(json).unwrap();

        assert_eq!(deduction.kind(), DeductionKind::HousingRent);
        assert_eq!(deduction.monthly_amount(), Money::from_yuan(1_500));
        assert_eq!(deduction.from().to_string(), "2025-03");
        assert_eq!(deduction.to(), None);
    }

    #[test]
    fn a_special_deduction_ending_before_it_starts_is_rejected() {
        let json = r#"{"kind":"housing_loan","monthly_amount":100000,"from":"2025-03","to":"2025-02"}"#;

        let parsed = serde_json::from_str::<SpecialDeduction>(json);

        assert!(parsed.is_err());
    }

    #[test]
    fn a_negative_special_deduction_is_rejected() {
        let from = Period::parse("2025-01").unwrap();

        let made = SpecialDeduction::new(DeductionKind::ElderlySupport, Money::from_fen(-1), from, None);

        assert!(made.is_err());
    }

    #[test]
    fn a_special_deduction_above_the_input_bound_is_rejected() {
        let from = Period::parse("2025-01").unwrap();
        let json = r#"{"kind":"housing_rent","monthly_amount":9223372036854775807,"from":"2025-03"}"#;

        assert!(SpecialDeduction::new(DeductionKind::HousingRent, Money::from_fen(i64::MAX), from, None).is_err());
        assert!(serde_json::from_str::<SpecialDeduction>(json).is_err());
    }
}
