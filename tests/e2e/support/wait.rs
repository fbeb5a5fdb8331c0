//! Waiting on the cluster: poll a condition on an object until it holds or a deadline passes.

use std::fmt::Debug;
use std::time::Duration;

use kube::Api;
use serde::de::DeserializeOwned;

/// How long any single wait may take before the test fails. Generous: CI machines are shared.
pub const WAIT: Duration = Duration::from_secs(60);

/// Poll `api.get(name)` until `check` returns `Some`, and return that value.
pub async fn until<K, T>(
    api: &Api<K>,
    name: &str,
    what: &str,
    check: impl Fn(Option<&K>) -> Option<T>,
) -> T
where
    K: Clone + DeserializeOwned + Debug,
{
    let deadline = tokio::time::Instant::now() + WAIT;
    loop {
        let current = api.get_opt(name).await.ok().flatten();
        if let Some(v) = check(current.as_ref()) {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what} of {name}; last seen: {current:#?}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
