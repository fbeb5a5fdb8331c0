//! Leader election on a `coordination.k8s.io/v1` Lease, so only one operator replica acts.
//! I/O: reads and writes the Lease with optimistic concurrency (resourceVersion).
//!
//! Ours because kube-runtime has none: client-go's `leaderelection` semantics (duration, renew
//! deadline, retry period, release on shutdown) in one small loop, with no extra crate.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use kube::Api;
use kube::api::PostParams;

/// A standby takes over at most `LEASE_DURATION + RETRY_PERIOD` (12 s) after a leader died
/// without releasing the lease (killed, node lost); a leader stepping down releases it and the
/// standby takes over within `RETRY_PERIOD`. controller-runtime's defaults (15 s, 10 s, 2 s)
/// would allow 17 s; we promise failover within 15 s. The leader renews every 2 s and gives
/// up after 7 s without a renewal, well before its lease could be taken.
pub const LEASE_DURATION: Duration = Duration::from_secs(10);
pub const RENEW_DEADLINE: Duration = Duration::from_secs(7);
pub const RETRY_PERIOD: Duration = Duration::from_secs(2);
/// How long a stopping leader tries to give the lease up. kube's client sets no read timeout,
/// so an API server that does not answer would otherwise hold the stop for good (Kubernetes
/// SIGKILLs after 30 s); the lease expires on its own anyway.
pub const RELEASE_WAIT: Duration = Duration::from_secs(5);

/// Why an attempt on the lease did not tell whether we hold it.
#[derive(Debug, thiserror::Error)]
enum AttemptError {
    #[error(transparent)]
    Api(kube::Error),
    #[error("no answer from the API server within {0:?}")]
    Unanswered(Duration),
}

pub struct LeaderElector {
    api: Api<Lease>,
    name: String,
    identity: String,
}

impl LeaderElector {
    pub fn new(api: Api<Lease>, name: &str, identity: &str) -> Self {
        Self {
            api,
            name: name.to_string(),
            identity: identity.to_string(),
        }
    }

    /// Wait until this replica holds the lease.
    pub async fn acquire(&self) {
        loop {
            match self.attempt(RENEW_DEADLINE).await {
                Ok(true) => return,
                Ok(false) => {}
                Err(e) => tracing::warn!(error = %e, lease = %self.name, "leader election"),
            }
            tokio::time::sleep(RETRY_PERIOD).await;
        }
    }

    /// Renew the lease until it cannot be renewed within the deadline; then return
    /// (leadership is lost and the caller must stop acting).
    pub async fn keep(&self) {
        let mut last_renewal = tokio::time::Instant::now();
        loop {
            tokio::time::sleep(RETRY_PERIOD).await;
            // An attempt may take only what is left of the deadline: one the API server never
            // answers would otherwise keep this replica acting after a standby took the lease.
            let left = RENEW_DEADLINE.saturating_sub(last_renewal.elapsed());
            match self.attempt(left).await {
                Ok(true) => last_renewal = tokio::time::Instant::now(),
                Ok(false) => return,
                Err(e) => tracing::warn!(error = %e, lease = %self.name, "renewing leader lease"),
            }
            if last_renewal.elapsed() >= RENEW_DEADLINE {
                return;
            }
        }
    }

    /// One attempt to acquire or renew, given up after `limit` (kube's client sets no read
    /// timeout).
    async fn attempt(&self, limit: Duration) -> Result<bool, AttemptError> {
        match tokio::time::timeout(limit, self.try_acquire_or_renew()).await {
            Ok(result) => result.map_err(AttemptError::Api),
            Err(_) => Err(AttemptError::Unanswered(limit)),
        }
    }

    /// Give the lease up so a standby replica takes over at once; not longer than
    /// `RELEASE_WAIT`, else the lease is left to expire.
    pub async fn release(&self) {
        if tokio::time::timeout(RELEASE_WAIT, self.give_up())
            .await
            .is_err()
        {
            tracing::warn!(
                lease = %self.name,
                "the lease could not be released within {RELEASE_WAIT:?}: a standby takes it \
                 when it expires ({LEASE_DURATION:?} after the last renewal)"
            );
        }
    }

    async fn give_up(&self) {
        if let Ok(mut lease) = self.api.get(&self.name).await {
            let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
            if spec.holder_identity.as_deref() == Some(self.identity.as_str()) {
                spec.holder_identity = None;
                let _ = self
                    .api
                    .replace(&self.name, &PostParams::default(), &lease)
                    .await;
            }
        }
    }

    /// One attempt: true when we hold the lease afterwards.
    async fn try_acquire_or_renew(&self) -> Result<bool, kube::Error> {
        let now = Timestamp::now();
        let existing = self.api.get_opt(&self.name).await?;
        let Some(mut lease) = existing else {
            let lease = Lease {
                metadata: ObjectMeta {
                    name: Some(self.name.clone()),
                    ..Default::default()
                },
                spec: Some(self.held_spec(now, now, 0)),
            };
            return match self.api.create(&PostParams::default(), &lease).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(e),
            };
        };
        let spec = lease.spec.clone().unwrap_or_default();
        let ours = spec.holder_identity.as_deref() == Some(self.identity.as_str());
        if !ours && !is_free(&spec, now) {
            return Ok(false);
        }
        let acquired = if ours {
            spec.acquire_time.map(|t| t.0).unwrap_or(now)
        } else {
            now
        };
        let transitions = spec.lease_transitions.unwrap_or(0) + i32::from(!ours);
        lease.spec = Some(self.held_spec(acquired, now, transitions));
        match self
            .api
            .replace(&self.name, &PostParams::default(), &lease)
            .await
        {
            Ok(_) => Ok(true),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
            Err(e) => Err(e),
        }
    }

    fn held_spec(&self, acquired: Timestamp, renewed: Timestamp, transitions: i32) -> LeaseSpec {
        LeaseSpec {
            holder_identity: Some(self.identity.clone()),
            lease_duration_seconds: Some(LEASE_DURATION.as_secs() as i32),
            acquire_time: Some(MicroTime(acquired)),
            renew_time: Some(MicroTime(renewed)),
            lease_transitions: Some(transitions),
            ..Default::default()
        }
    }
}

/// A lease nobody holds, or whose holder stopped renewing it.
fn is_free(spec: &LeaseSpec, now: Timestamp) -> bool {
    let Some(holder) = spec.holder_identity.as_deref() else {
        return true;
    };
    if holder.is_empty() {
        return true;
    }
    let Some(renewed) = spec.renew_time.as_ref() else {
        return true;
    };
    let duration = i64::from(
        spec.lease_duration_seconds
            .unwrap_or(LEASE_DURATION.as_secs() as i32),
    );
    renewed.0 + jiff::SignedDuration::from_secs(duration) < now
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(holder: Option<&str>, renewed_secs_ago: Option<i64>) -> LeaseSpec {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        LeaseSpec {
            holder_identity: holder.map(str::to_string),
            renew_time: renewed_secs_ago
                .map(|s| MicroTime(now - jiff::SignedDuration::from_secs(s))),
            lease_duration_seconds: Some(15),
            ..Default::default()
        }
    }

    #[test]
    fn a_lease_is_free_when_unheld_or_expired() {
        let now: Timestamp = "2026-01-01T00:00:00Z".parse().unwrap();
        let cases = [
            (spec(None, None), true),
            (spec(Some(""), Some(1)), true),
            (spec(Some("other"), Some(5)), false),
            (spec(Some("other"), Some(16)), true),
            (spec(Some("other"), None), true),
        ];
        for (i, (s, want)) in cases.into_iter().enumerate() {
            assert_eq!(is_free(&s, now), want, "case {i}");
        }
    }
}
