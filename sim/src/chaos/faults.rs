//! Fault injection (error rates, latency) and request accounting by verb, resource and user
//! agent (no I/O; the server consults it on every request).
use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::Duration;

use super::rng::Rng;
use crate::store::ApiError;

/// One fault: requests matching `verb` and `resource` (None = any) fail with `code` (0 = no
/// error, latency only) with probability `rate`, after `latency`. With `after_write` the request
/// is carried out first (stored, watch events sent) and only its answer is replaced by the error.
#[derive(Clone, Debug, PartialEq)]
pub struct FaultRule {
    /// "get", "list", "watch", "create", "update", "patch", "delete", "deletecollection".
    pub verb: Option<String>,
    /// Plural, with subresource if any: "pods", "pods/status", "tfjobs".
    pub resource: Option<String>,
    /// 500, 429 (sent with Retry-After), 409, ... or 0 for latency only.
    pub code: u16,
    /// Probability in 0..=1 that a matching request is hit.
    pub rate: f64,
    pub latency: Duration,
    /// Retry-After seconds for 429.
    pub retry_after_seconds: u32,
    /// Apply the request, then answer `code` (a server that timed out after committing).
    pub after_write: bool,
}

impl FaultRule {
    /// `code` on a fraction `rate` of matching requests.
    pub fn error(verb: Option<&str>, resource: Option<&str>, code: u16, rate: f64) -> Self {
        Self {
            verb: verb.map(String::from),
            resource: resource.map(String::from),
            code,
            rate,
            latency: Duration::ZERO,
            retry_after_seconds: 1,
            after_write: false,
        }
    }
    /// `code` on a fraction `rate` of matching requests, answered after the request took effect:
    /// the write is stored and its watch events sent, but the client sees the error (as when
    /// an API server times out after etcd committed). Requests that fail on their own keep their
    /// own answer.
    pub fn error_after_write(
        verb: Option<&str>,
        resource: Option<&str>,
        code: u16,
        rate: f64,
    ) -> Self {
        Self {
            after_write: true,
            ..Self::error(verb, resource, code, rate)
        }
    }
    /// Added latency on every matching request.
    pub fn latency(verb: Option<&str>, resource: Option<&str>, latency: Duration) -> Self {
        Self {
            latency,
            ..Self::error(verb, resource, 0, 1.0)
        }
    }
    fn matches(&self, verb: &str, resource: &str) -> bool {
        self.verb.as_deref().is_none_or(|v| v == verb)
            && self.resource.as_deref().is_none_or(|r| r == resource)
    }
}

/// A counted request.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct RequestKey {
    pub verb: String,
    pub resource: String,
    pub user_agent: String,
}

/// A snapshot of request counters.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RequestCounts(pub BTreeMap<RequestKey, u64>);

/// The verbs that count as writes.
pub const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];

impl RequestCounts {
    /// Requests with this verb and resource (None = any), over all user agents.
    pub fn count(&self, verb: Option<&str>, resource: Option<&str>) -> u64 {
        self.0
            .iter()
            .filter(|(k, _)| {
                verb.is_none_or(|v| v == k.verb) && resource.is_none_or(|r| r == k.resource)
            })
            .map(|(_, n)| n)
            .sum()
    }
    /// Requests whose user agent contains `needle`.
    pub fn by_user_agent(&self, needle: &str) -> u64 {
        self.0
            .iter()
            .filter(|(k, _)| k.user_agent.contains(needle))
            .map(|(_, n)| n)
            .sum()
    }
    /// Write requests (create, update, patch, delete, deletecollection).
    pub fn writes(&self) -> u64 {
        self.0
            .iter()
            .filter(|(k, _)| WRITE_VERBS.contains(&k.verb.as_str()))
            .map(|(_, n)| n)
            .sum()
    }
    /// Counts accumulated since `earlier` was taken.
    pub fn since(&self, earlier: &RequestCounts) -> RequestCounts {
        let mut out = BTreeMap::new();
        for (k, n) in &self.0 {
            let d = n - earlier.0.get(k).copied().unwrap_or(0);
            if d > 0 {
                out.insert(k.clone(), d);
            }
        }
        RequestCounts(out)
    }
}

/// What to do to one request.
#[derive(Debug, Default)]
pub struct Decision {
    pub latency: Duration,
    /// Fail the request before it is routed (no side effect).
    pub error: Option<ApiError>,
    /// Carry the request out, then answer this error if it succeeded.
    pub error_after: Option<ApiError>,
}

/// Rules, counters and a deterministic random source.
pub struct Faults {
    rules: Mutex<Vec<FaultRule>>,
    counts: Mutex<BTreeMap<RequestKey, u64>>,
    rng: Rng,
}

impl Faults {
    pub fn new(seed: u64) -> Self {
        Self {
            rules: Mutex::new(Vec::new()),
            counts: Mutex::new(BTreeMap::new()),
            rng: Rng::new(seed),
        }
    }
    pub fn add_rule(&self, rule: FaultRule) {
        self.rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(rule);
    }
    pub fn clear_rules(&self) {
        self.rules.lock().unwrap_or_else(|e| e.into_inner()).clear();
    }
    pub fn record(&self, verb: &str, resource: &str, user_agent: &str) {
        let key = RequestKey {
            verb: verb.into(),
            resource: resource.into(),
            user_agent: user_agent.into(),
        };
        *self
            .counts
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_default() += 1;
    }
    pub fn counts(&self) -> RequestCounts {
        RequestCounts(
            self.counts
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        )
    }
    pub fn decide(&self, verb: &str, resource: &str) -> Decision {
        let rules: Vec<FaultRule> = self
            .rules
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|r| r.matches(verb, resource))
            .cloned()
            .collect();
        let mut d = Decision::default();
        for r in rules {
            d.latency += r.latency;
            let slot = if r.after_write {
                &mut d.error_after
            } else {
                &mut d.error
            };
            if r.code == 0 || slot.is_some() || self.rng.unit() >= r.rate {
                continue;
            }
            *slot = Some(injected_error(&r));
        }
        if d.error.is_some() {
            d.error_after = None;
        }
        d
    }
}

fn injected_error(r: &FaultRule) -> ApiError {
    match r.code {
        429 => ApiError {
            retry_after: Some(r.retry_after_seconds),
            ..ApiError::new(
                429,
                "TooManyRequests",
                "sim: injected fault: too many requests, please try again later",
            )
        },
        409 => ApiError::new(
            409,
            "Conflict",
            "sim: injected fault: the object has been modified; please apply your changes to the latest version and try again",
        ),
        503 => ApiError::new(
            503,
            "ServiceUnavailable",
            "sim: injected fault: service unavailable",
        ),
        code => ApiError::new(
            code,
            "InternalError",
            format!("sim: injected fault: internal error ({code})"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rates_and_matching() {
        let f = Faults::new(42);
        f.add_rule(FaultRule::error(Some("create"), Some("pods"), 500, 0.5));
        let hits = (0..1000)
            .filter(|_| f.decide("create", "pods").error.is_some())
            .count();
        assert!((400..600).contains(&hits), "{hits}");
        assert!(f.decide("get", "pods").error.is_none());
        assert!(f.decide("create", "pods/status").error.is_none());
        f.clear_rules();
        f.add_rule(FaultRule::error(None, None, 429, 1.0));
        let e = f.decide("list", "tfjobs").error;
        assert_eq!(e.as_ref().map(|e| e.code), Some(429));
        assert_eq!(e.and_then(|e| e.retry_after), Some(1));
    }

    #[test]
    fn error_after_write_is_decided_apart_from_errors_before_routing() {
        // (rules, want error before routing, want error after the request)
        let cases = [
            (
                vec![FaultRule::error_after_write(Some("create"), None, 500, 1.0)],
                None,
                Some(500),
            ),
            (
                vec![
                    FaultRule::error_after_write(Some("create"), None, 500, 1.0),
                    FaultRule::error(Some("create"), None, 429, 1.0),
                ],
                Some(429),
                None,
            ),
            (
                vec![FaultRule::error_after_write(Some("delete"), None, 500, 1.0)],
                None,
                None,
            ),
        ];
        for (rules, before, after) in cases {
            let f = Faults::new(7);
            for r in rules.clone() {
                f.add_rule(r);
            }
            let d = f.decide("create", "pods");
            assert_eq!(d.error.map(|e| e.code), before, "{rules:?}");
            assert_eq!(d.error_after.map(|e| e.code), after, "{rules:?}");
        }
    }

    #[test]
    fn counters_diff() {
        let f = Faults::new(1);
        f.record("get", "pods", "ua");
        let before = f.counts();
        f.record("create", "pods", "ua");
        f.record("get", "pods", "ua");
        let d = f.counts().since(&before);
        assert_eq!(d.count(Some("get"), None), 1);
        assert_eq!(d.writes(), 1);
        assert_eq!(f.counts().count(None, Some("pods")), 3);
    }
}
