//! Resource quantities (`500m`, `2Gi`, `1e3`) as exact numbers, to add up the requests of a
//! gang's pods and to compare a PodGroup's `minResources` by value (`1` equals `1000m`). Pure.
//!
//! Kubernetes keeps quantities to nano precision; so does this (`i128` nano-units hold
//! every value a resource list can carry). Anything finer is rounded up, as Kubernetes does.

use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

const NANO: i128 = 1_000_000_000;

/// A parsed quantity: its value in nano-units, and whether it was written with a binary
/// suffix (`Ki`…`Ei`), so a sum of memory sizes reads `6Gi` rather than `6442450944`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Amount {
    pub nanos: i128,
    pub binary: bool,
}

impl Amount {
    pub const ZERO: Amount = Amount {
        nanos: 0,
        binary: false,
    };

    /// Parses Kubernetes' quantity syntax; None when it is not a quantity.
    pub fn parse(text: &str) -> Option<Amount> {
        let text = text.trim();
        let (sign, rest) = match text.strip_prefix('-') {
            Some(rest) => (-1, rest),
            None => (1, text.strip_prefix('+').unwrap_or(text)),
        };
        let split = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let (number, suffix) = rest.split_at(split);
        let (whole, fraction) = number.split_once('.').unwrap_or((number, ""));
        if whole.is_empty() && fraction.is_empty() {
            return None;
        }
        // Digits as an integer, and the power of ten that scales it to units.
        let digits: i128 = format!("{whole}{fraction}").parse().ok()?;
        let scale = -(fraction.len() as i32);
        let (factor, exponent, binary) = match suffix {
            "Ki" => (1i128 << 10, 0, true),
            "Mi" => (1 << 20, 0, true),
            "Gi" => (1 << 30, 0, true),
            "Ti" => (1 << 40, 0, true),
            "Pi" => (1 << 50, 0, true),
            "Ei" => (1 << 60, 0, true),
            "n" => (1, -9, false),
            "u" => (1, -6, false),
            "m" => (1, -3, false),
            "" => (1, 0, false),
            "k" => (1, 3, false),
            "M" => (1, 6, false),
            "G" => (1, 9, false),
            "T" => (1, 12, false),
            "P" => (1, 15, false),
            "E" => (1, 18, false),
            e if e.starts_with(['e', 'E']) => (1, e[1..].parse::<i32>().ok()?, false),
            _ => return None,
        };
        let nanos = scaled(digits.checked_mul(factor)?, scale + exponent + 9)?;
        Some(Amount {
            nanos: sign * nanos,
            binary,
        })
    }

    pub fn plus(self, other: Amount) -> Amount {
        Amount {
            nanos: self.nanos.saturating_add(other.nanos),
            binary: self.binary || other.binary,
        }
    }

    /// The canonical text: a binary suffix for a whole multiple of 1024 when written in one,
    /// else the largest decimal suffix that keeps the number whole (`1500m`, `3`, `2k`).
    pub fn to_quantity(self) -> Quantity {
        Quantity(self.text())
    }

    fn text(self) -> String {
        let n = self.nanos;
        if self.binary && n != 0 && n % NANO == 0 {
            let units = n / NANO;
            for (shift, suffix) in [
                (60, "Ei"),
                (50, "Pi"),
                (40, "Ti"),
                (30, "Gi"),
                (20, "Mi"),
                (10, "Ki"),
            ] {
                if units % (1i128 << shift) == 0 {
                    return format!("{}{suffix}", units >> shift);
                }
            }
        }
        if n == 0 {
            return "0".to_string();
        }
        let suffixes = [
            (27, "E"),
            (24, "P"),
            (21, "T"),
            (18, "G"),
            (15, "M"),
            (12, "k"),
            (9, ""),
            (6, "m"),
            (3, "u"),
        ];
        for (power, suffix) in suffixes {
            let unit = 10i128.pow(power);
            if n % unit == 0 {
                return format!("{}{suffix}", n / unit);
            }
        }
        format!("{n}n")
    }
}

/// `value` × 10^`power`, rounded up (away from zero) when `power` is negative.
fn scaled(value: i128, power: i32) -> Option<i128> {
    if power >= 0 {
        return value.checked_mul(10i128.checked_pow(power as u32)?);
    }
    let divisor = 10i128.checked_pow(power.unsigned_abs())?;
    Some((value + divisor - 1) / divisor)
}

/// Whether two quantities mean the same amount (`1` and `1000m`); unparsable ones are equal
/// only when written alike.
pub fn same(a: &Quantity, b: &Quantity) -> bool {
    match (Amount::parse(&a.0), Amount::parse(&b.0)) {
        (Some(x), Some(y)) => x.nanos == y.nanos,
        _ => a.0 == b.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sum(items: &[&str]) -> String {
        items
            .iter()
            .map(|s| Amount::parse(s).unwrap_or_else(|| panic!("{s} parses")))
            .fold(Amount::ZERO, Amount::plus)
            .to_quantity()
            .0
    }

    #[test]
    fn sums_read_as_kubernetes_writes_them() {
        let cases: &[(&[&str], &str)] = &[
            (&["1", "1", "1"], "3"),
            (&["500m", "500m", "500m"], "1500m"),
            (&["1", "500m"], "1500m"),
            (&["0.5", "0.5"], "1"),
            (&["2Gi", "2Gi", "2Gi"], "6Gi"),
            (&["512Mi", "512Mi"], "1Gi"),
            (&["1Gi", "1G"], "2073741824"),
            (&["1k", "1000"], "2k"),
            (&["1e3"], "1k"),
            (&["100n"], "100n"),
            (&["1.5Gi"], "1536Mi"),
            (&[], "0"),
            (&["2"], "2"),
        ];
        for (items, want) in cases {
            assert_eq!(sum(items), *want, "{items:?}");
        }
    }

    #[test]
    fn not_a_quantity() {
        for bad in ["", "lots", "1x", "1.2.3", "Gi", "."] {
            assert_eq!(Amount::parse(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn finer_than_nano_rounds_up() {
        assert_eq!(Amount::parse("0.0000000001").map(|a| a.nanos), Some(1));
    }

    #[test]
    fn equal_by_value() {
        let q = |s: &str| Quantity(s.to_string());
        assert!(same(&q("1"), &q("1000m")));
        assert!(same(&q("1Gi"), &q("1024Mi")));
        assert!(!same(&q("1"), &q("2")));
        assert!(same(&q("weird"), &q("weird")));
    }
}
