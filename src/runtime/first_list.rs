//! Whether a scope's TFJob watch has listed once, and the stop of a scope whose watch has not.
//! No I/O (a watch channel between the TFJob watch and the scope).
//!
//! Why: kube-runtime's `Controller` starts no pass before its store has listed once, and its
//! graceful shutdown stops reading the watch that fills the store, then waits for its runner,
//! which waits for that store. A stop that comes before the first list (the TFJob CRD not
//! installed, listing TFJobs forbidden, a first list still under way) never ended: the
//! operator logged that it was shutting down and stayed up until it was killed. Before the
//! first list no pass has started, so there is nothing to drain and the scope stops at once.

use std::future::Future;

use futures::{Stream, StreamExt};
use kube::runtime::watcher::{self, Event};
use tokio::sync::watch;

/// Whether the TFJob watch has listed once (and so kube's controller may have started passes).
#[derive(Clone, Debug)]
pub struct FirstList(watch::Receiver<bool>);

/// Passes the watch's `events` through, noting the end of its first list. Put it after the
/// reflector, so that the list is noted only once the store holds it.
pub fn note_first_list<K>(
    events: impl Stream<Item = watcher::Result<Event<K>>>,
) -> (impl Stream<Item = watcher::Result<Event<K>>>, FirstList) {
    let (listed, first_list) = watch::channel(false);
    let events = events.inspect(move |event| {
        if matches!(event, Ok(Event::InitDone)) {
            listed.send_replace(true);
        }
    });
    (events, FirstList(first_list))
}

impl FirstList {
    /// Whether the first list has ended.
    pub fn listed(&self) -> bool {
        *self.0.borrow()
    }

    /// Resolves when `shutdown` does if the watch had not listed by then; otherwise never
    /// (kube's controller then drains the passes in flight and ends on its own).
    pub async fn stopped_before(self, shutdown: impl Future<Output = ()>) {
        shutdown.await;
        if self.listed() {
            futures::future::pending::<()>().await;
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use futures::FutureExt;
    use futures::stream;

    use super::*;

    type Events = Vec<watcher::Result<Event<()>>>;

    /// Drives `events` through `note_first_list`, then asks whether a stop would end the scope.
    async fn stops_at_once(events: Events) -> bool {
        let (events, first_list) = note_first_list(stream::iter(events));
        events.collect::<Vec<_>>().await;
        let stop = first_list.stopped_before(async {});
        tokio::time::timeout(Duration::from_millis(50), stop)
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_stop_before_the_first_list_ends_the_scope_at_once() {
        let refused = || Err(watcher::Error::NoResourceVersion);
        assert!(stops_at_once(vec![]).await, "nothing seen yet");
        assert!(
            stops_at_once(vec![refused(), refused()]).await,
            "only errors"
        );
        assert!(
            stops_at_once(vec![Ok(Event::Init), Ok(Event::InitApply(()))]).await,
            "a list still under way"
        );
    }

    #[tokio::test]
    async fn a_stop_after_the_first_list_is_left_to_the_controller() {
        let listed = vec![
            Ok(Event::Init),
            Ok(Event::InitApply(())),
            Ok(Event::InitDone),
        ];
        assert!(!stops_at_once(listed).await);
        let relisting = vec![Ok(Event::Init), Ok(Event::InitDone), Ok(Event::Init)];
        assert!(
            !stops_at_once(relisting).await,
            "a later re-list changes nothing"
        );
    }

    #[test]
    fn the_stop_waits_for_the_shutdown() {
        let (_events, first_list) = note_first_list(stream::empty::<watcher::Result<Event<()>>>());
        let stop = first_list.stopped_before(futures::future::pending());
        assert!(stop.now_or_never().is_none());
    }
}
