//! String `format` checks for the formats CRD schemas commonly use (pure, no I/O).
//!
//! Lenient where the real server (go-openapi strfmt) is lenient: `date-time` accepts RFC 3339
//! with or without fractional seconds and a zone-less civil date-time; unknown formats (and
//! numeric ones like `int32`) always pass, as in the real server.

use std::net::{Ipv4Addr, Ipv6Addr};

/// Whether `s` is a valid instance of `format`.
pub(crate) fn is_valid(format: &str, s: &str) -> bool {
    match format {
        "date-time" => {
            s.parse::<jiff::Timestamp>().is_ok() || s.parse::<jiff::civil::DateTime>().is_ok()
        }
        "date" => s.len() == 10 && s.parse::<jiff::civil::Date>().is_ok(),
        "ipv4" => s.parse::<Ipv4Addr>().is_ok(),
        "ipv6" => s.parse::<Ipv6Addr>().is_ok(),
        "uuid" => is_uuid(s),
        "byte" => is_base64(s),
        "email" => s
            .split_once('@')
            .is_some_and(|(a, b)| !a.is_empty() && b.contains('.')),
        _ => true,
    }
}

fn is_uuid(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    groups.len() == 5
        && groups
            .iter()
            .zip(lens)
            .all(|(g, n)| g.len() == n && g.chars().all(|c| c.is_ascii_hexdigit()))
}

fn is_base64(s: &str) -> bool {
    s.len().is_multiple_of(4)
        && s.trim_end_matches('=')
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '+' || c == '/')
        && s.len() - s.trim_end_matches('=').len() <= 2
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let cases = [
            ("date-time", "2024-01-02T03:04:05Z", true),
            ("date-time", "2024-01-02T03:04:05.123456+02:00", true),
            ("date-time", "2024-01-02T03:04:05", true),
            ("date-time", "yesterday", false),
            ("date", "2024-01-02", true),
            ("date", "2024-13-02", false),
            ("ipv4", "10.0.0.1", true),
            ("ipv4", "10.0.0", false),
            ("ipv6", "::1", true),
            ("uuid", "123e4567-e89b-12d3-a456-426614174000", true),
            ("uuid", "123e4567", false),
            ("byte", "aGVsbG8=", true),
            ("byte", "a?", false),
            ("email", "a@b.io", true),
            ("email", "nope", false),
            ("int32", "whatever", true),
            ("no-such-format", "x", true),
        ];
        for (format, s, want) in cases {
            assert_eq!(is_valid(format, s), want, "{format} {s}");
        }
    }
}
