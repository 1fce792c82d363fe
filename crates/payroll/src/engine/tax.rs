//! The two IIT tables and integer rounding. Amounts are fen; rates are whole percents.

use atrium_kernel::Money;

/// One row: applies to amounts up to and including `upper` fen.
struct Band {
    upper: i64,
    percent: i64,
    quick_deduction: i64,
}

const fn band(upper_yuan: i64, percent: i64, quick_deduction_yuan: i64) -> Band {
    Band { upper: upper_yuan * 100, percent, quick_deduction: quick_deduction_yuan * 100 }
}

/// The open-ended top row.
const fn above(percent: i64, quick_deduction_yuan: i64) -> Band {
    Band { upper: i64::MAX, percent, quick_deduction: quick_deduction_yuan * 100 }
}

/// Annual table for cumulative taxable income.
const ANNUAL: [Band; 7] = [
    band(36_000, 3, 0),
    band(144_000, 10, 2_520),
    band(300_000, 20, 16_920),
    band(420_000, 25, 31_920),
    band(660_000, 30, 52_920),
    band(960_000, 35, 85_920),
    above(45, 181_920),
];

/// Monthly table, used for the separately taxed annual bonus divided by 12.
const MONTHLY: [Band; 7] = [
    band(3_000, 3, 0),
    band(12_000, 10, 210),
    band(25_000, 20, 1_410),
    band(35_000, 25, 2_660),
    band(55_000, 30, 4_410),
    band(80_000, 35, 7_160),
    above(45, 15_160),
];

/// `n / d` rounded to the nearest integer, halves away from zero. `d` must be positive
/// and even (100 or 1,000,000 here), so `d / 2` is exactly a half.
pub(crate) const fn div_round_half_up(n: i64, d: i64) -> i64 {
    let half = d / 2;
    if n >= 0 { (n + half) / d } else { -((-n + half) / d) }
}

/// `amount × parts / d`, rounded half up; i64 when it fits (the compiler turns a constant
/// division into a multiplication), i128 otherwise. Saturates at the i64 range.
pub(crate) fn mul_div_round(amount: i64, parts: i64, d: i64) -> i64 {
    match amount.checked_mul(parts) {
        // Leave room for adding the half without overflowing.
        Some(n) if n.unsigned_abs() <= (i64::MAX / 2) as u64 => div_round_half_up(n, d),
        _ => {
            let n = i128::from(amount) * i128::from(parts);
            let half = i128::from(d / 2);
            let d = i128::from(d);
            let q = if n >= 0 { (n + half) / d } else { -((-n + half) / d) };
            i64::try_from(q).unwrap_or(if q < 0 { i64::MIN } else { i64::MAX })
        }
    }
}

/// Tax on `amount` by a table: `amount × rate − quick deduction`, rounded to the fen.
fn by_table(table: &[Band; 7], row_key: i64, amount: i64) -> i64 {
    let mut row = &table[6];
    for band in table {
        if row_key <= band.upper {
            row = band;
            break;
        }
    }
    mul_div_round(amount, row.percent, 100).saturating_sub(row.quick_deduction)
}

/// Cumulative tax on cumulative taxable income by the annual table (each band includes its
/// upper bound), rounded to the fen half up. Zero for zero or negative income.
pub fn cumulative_tax(cumulative_taxable: Money) -> Money {
    let taxable = cumulative_taxable.fen();
    if taxable <= 0 {
        return Money::ZERO;
    }
    Money::from_fen(by_table(&ANNUAL, taxable, taxable).max(0))
}

/// Tax on an annual one-off bonus taxed separately: `bonus × rate − quick deduction`, where
/// `bonus ÷ 12` picks the row of the monthly table (bands include their upper bounds).
/// Rounded to the fen half up, never negative.
pub fn annual_bonus_tax(annual_bonus: Money) -> Money {
    let bonus = annual_bonus.fen();
    if bonus <= 0 {
        return Money::ZERO;
    }
    // Bounds are whole fen, so ceil(bonus / 12) <= upper exactly when bonus / 12 <= upper.
    let per_month_key = bonus / 12 + i64::from(bonus % 12 != 0);
    Money::from_fen(by_table(&MONTHLY, per_month_key, bonus).max(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yuan(y: i64) -> Money {
        Money::from_yuan(y)
    }

    #[test]
    fn each_annual_band_includes_its_upper_bound() {
        // 36,000 × 3 % = 1,080; one fen more: 36,000.01 × 10 % − 2,520 = 1,080.001 → 1,080.00.
        assert_eq!(cumulative_tax(yuan(36_000)), Money::from_fen(108_000));
        assert_eq!(cumulative_tax(Money::from_fen(3_600_001)), Money::from_fen(108_000));
        // 144,000 × 10 % − 2,520 = 11,880; 144,000 × 20 % − 16,920 = 11,880 too.
        assert_eq!(cumulative_tax(yuan(144_000)), yuan(11_880));
        // 960,000 × 35 % − 85,920 = 250,080.
        assert_eq!(cumulative_tax(yuan(960_000)), yuan(250_080));
        // 1,000,000 × 45 % − 181,920 = 268,080.
        assert_eq!(cumulative_tax(yuan(1_000_000)), yuan(268_080));
    }

    #[test]
    fn both_tables_are_continuous_at_every_band_edge() {
        for pair in ANNUAL.windows(2).chain(MONTHLY.windows(2)) {
            let edge = pair[0].upper;
            let low = mul_div_round(edge, pair[0].percent, 100) - pair[0].quick_deduction;
            let high = mul_div_round(edge, pair[1].percent, 100) - pair[1].quick_deduction;

            assert_eq!(low, high, "edge {edge}");
        }
    }

    #[test]
    fn no_taxable_income_means_no_cumulative_tax() {
        assert_eq!(cumulative_tax(Money::ZERO), Money::ZERO);
        assert_eq!(cumulative_tax(Money::from_fen(-500)), Money::ZERO);
    }

    #[test]
    fn cumulative_tax_rounds_half_a_fen_up() {
        // 0.50 yuan × 3 % = 1.5 fen → 2 fen; 0.49 yuan × 3 % = 1.47 fen → 1 fen.
        assert_eq!(cumulative_tax(Money::from_fen(50)), Money::from_fen(2));
        assert_eq!(cumulative_tax(Money::from_fen(49)), Money::from_fen(1));
    }

    #[test]
    fn an_annual_bonus_of_36000_yuan_is_taxed_at_three_percent() {
        // 36,000 ÷ 12 = 3,000 ≤ 3,000 → 3 %, 0: 36,000 × 3 % = 1,080.00.
        assert_eq!(annual_bonus_tax(yuan(36_000)), Money::from_fen(108_000));
    }

    #[test]
    fn an_annual_bonus_one_yuan_over_the_cliff_is_taxed_at_ten_percent() {
        // 36,001 ÷ 12 = 3,000.08 > 3,000 → 10 %, 210: 3,600.10 − 210 = 3,390.10.
        assert_eq!(annual_bonus_tax(yuan(36_001)), Money::from_fen(339_010));
    }

    #[test]
    fn an_annual_bonus_one_fen_over_the_cliff_already_takes_the_next_row() {
        // 36,000.01 ÷ 12 = 3,000.0008… > 3,000 → 10 %: 3,600.001 − 210 = 3,390.001 → 3,390.00.
        assert_eq!(annual_bonus_tax(Money::from_fen(3_600_001)), Money::from_fen(339_000));
    }

    #[test]
    fn annual_bonus_rows_are_picked_by_the_monthly_share() {
        // 144,000 ÷ 12 = 12,000 → 10 %, 210: 14,400 − 210 = 14,190.
        assert_eq!(annual_bonus_tax(yuan(144_000)), yuan(14_190));
        // 300,000 ÷ 12 = 25,000 → 20 %, 1,410: 60,000 − 1,410 = 58,590.
        assert_eq!(annual_bonus_tax(yuan(300_000)), yuan(58_590));
        // 1,200,000 ÷ 12 = 100,000 → 45 %, 15,160: 540,000 − 15,160 = 524,840.
        assert_eq!(annual_bonus_tax(yuan(1_200_000)), yuan(524_840));
        assert_eq!(annual_bonus_tax(Money::ZERO), Money::ZERO);
    }

    #[test]
    fn rounding_is_half_away_from_zero() {
        assert_eq!(div_round_half_up(5, 10), 1);
        assert_eq!(div_round_half_up(4, 10), 0);
        assert_eq!(div_round_half_up(-5, 10), -1);
        assert_eq!(mul_div_round(i64::MAX, 100, 100), i64::MAX);
        assert_eq!(mul_div_round(i64::MAX, 200, 100), i64::MAX);
        assert_eq!(mul_div_round(i64::MIN, 200, 100), i64::MIN);
    }
}
