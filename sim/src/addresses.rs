//! The addresses the sim hands out, all in 198.18.0.0/15 (RFC 2544, benchmarking): the range
//! the project's tests may use. The sim sends nothing to any of them.
use std::net::Ipv4Addr;

/// Pods' IPs: 198.19.128.0/17.
pub const POD_RANGE: Range = Range {
    base: Ipv4Addr::new(198, 19, 128, 0),
    size: 1 << 15,
};

/// Services' cluster IPs: 198.19.64.0/18.
pub const SERVICE_RANGE: Range = Range {
    base: Ipv4Addr::new(198, 19, 64, 0),
    size: 1 << 14,
};

/// A block of addresses.
pub struct Range {
    base: Ipv4Addr,
    size: u32,
}

impl Range {
    /// The Nth host address of the range (its first and last, the network's and the
    /// broadcast's, left out), starting over past the end: live objects never number that many.
    pub fn nth(&self, n: u32) -> String {
        Ipv4Addr::from(u32::from(self.base) + 1 + n % (self.size - 2)).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_stay_inside_their_range_and_skip_its_ends() {
        assert_eq!(POD_RANGE.nth(0), "198.19.128.1");
        assert_eq!(POD_RANGE.nth(300), "198.19.129.45");
        assert_eq!(POD_RANGE.nth((1 << 15) - 3), "198.19.255.254");
        assert_eq!(POD_RANGE.nth((1 << 15) - 2), "198.19.128.1");
        assert_eq!(SERVICE_RANGE.nth(9), "198.19.64.10");
        assert_eq!(SERVICE_RANGE.nth((1 << 14) - 3), "198.19.127.254");
    }
}
