//! How a watch gets its first full view: a streaming list where the API server serves one, else
//! pages of a list. I/O (wraps kube-runtime's watcher).
//!
//! A streaming list (KEP-3157, "watch-list") is one watch request that sends every object as an
//! event and then a bookmark marking the end of the initial view: one request per resource at
//! start, however many objects, and objects decoded one at a time instead of 500 per page. An
//! operator restarted beside 50k pods makes 1 request for them instead of 100.
//!
//! Not every server serves it: the `WatchList` feature is on by default in Kubernetes 1.32 and
//! from 1.34, off in 1.33, alpha before. A server without it refuses the request as invalid (422,
//! the `sendInitialEvents`/`resourceVersionMatch` parameters of a watch), so the first refusal
//! switches that watch to paged lists for good; any other error is retried as before.

use futures::{Stream, StreamExt, stream};
use kube::Api;
use kube::runtime::watcher::{self, Event, watcher};
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// kube-runtime's watcher of `api` with `config`, starting (and re-listing after a lost history)
/// with a streaming list, or with paged lists on a server that refuses streaming ones.
pub fn watch<K>(
    api: Api<K>,
    config: watcher::Config,
) -> impl Stream<Item = watcher::Result<Event<K>>> + Send
where
    K: kube::Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let streaming = watcher(api.clone(), config.clone().streaming_lists()).boxed();
    stream::once(async move {
        let (first, rest) = streaming.into_future().await;
        match first {
            Some(Err(error)) if refuses_streaming_lists(&error) => {
                tracing::info!(
                    %error,
                    "the API server serves no streaming lists; listing in pages instead"
                );
                watcher(api, config).boxed()
            }
            first => stream::iter(first).chain(rest).boxed(),
        }
    })
    .flatten()
}

/// The answer of a server without streaming lists: the watch is refused as invalid (422) or as a
/// bad request (400), before any event.
fn refuses_streaming_lists(error: &watcher::Error) -> bool {
    matches!(
        error,
        watcher::Error::WatchStartFailed(kube::Error::Api(status))
            if status.code == 422 || status.code == 400
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::Status;

    fn start_failed(code: u16) -> watcher::Error {
        let status = Status::failure("sendInitialEvents is forbidden", "Invalid").with_code(code);
        watcher::Error::WatchStartFailed(kube::Error::Api(Box::new(status)))
    }

    #[test]
    fn a_refused_streaming_list_falls_back_and_other_errors_are_retried() {
        assert!(refuses_streaming_lists(&start_failed(422)));
        assert!(refuses_streaming_lists(&start_failed(400)));
        // Forbidden (RBAC), a server error, or a failure of a watch already running: not
        // the server's word on streaming lists, so retried with the same strategy.
        assert!(!refuses_streaming_lists(&start_failed(403)));
        assert!(!refuses_streaming_lists(&start_failed(500)));
        let status = Status::failure("gone", "Expired").with_code(422);
        let running = watcher::Error::WatchFailed(kube::Error::Api(Box::new(status)));
        assert!(!refuses_streaming_lists(&running));
    }
}
