//! Events published behind the passes (docs/behaviour.md §9): a pass hands its events to a
//! bounded queue and goes on to its status write; one task publishes them, in the order they
//! were queued, a few at a time. I/O.
//!
//! Why: on a busy API server an event is a write like any other. Published inside the pass,
//! a short job's four events stood between it and its status writes, and under a burst they
//! took a third of the API server's work while children were still missing. client-go's
//! recorder works the same way (in the background, behind the writes that matter); unlike it,
//! a full queue makes the pass wait instead of dropping the event.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ObjectReference;
use kube::runtime::events::EventType;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::recorder::{EventRecorder, Note};
use crate::error::{api_words, is_namespace_terminating};

/// Events waiting to be published before a pass that queues one more waits for room.
const QUEUE: usize = 4096;
/// Events being published at once.
const IN_FLIGHT: usize = 4;

/// One event to publish, owned, with the time it happened.
pub struct Queued {
    pub type_: EventType,
    pub reason: String,
    pub action: String,
    pub note: String,
    pub regarding: ObjectReference,
    pub at: Timestamp,
}

/// The sending side; the publishing task ends once every sender is dropped and the queue is
/// empty (`Publisher::finish_within`).
#[derive(Clone)]
pub struct EventQueue {
    tx: mpsc::Sender<Queued>,
}

/// The task that publishes what is queued.
pub struct Publisher {
    task: JoinHandle<()>,
}

/// A queue and the task that empties it through `recorder`.
pub fn start(recorder: EventRecorder) -> (EventQueue, Publisher) {
    let (tx, rx) = mpsc::channel(QUEUE);
    let recorder = Arc::new(recorder);
    let task = tokio::spawn(async move {
        futures::stream::unfold(rx, |mut rx| async move { Some((rx.recv().await?, rx)) })
            .map(|queued| publish(recorder.clone(), queued))
            .buffered(IN_FLIGHT)
            .collect::<()>()
            .await;
    });
    (EventQueue { tx }, Publisher { task })
}

impl EventQueue {
    /// Queues `event`; waits only while the queue is full.
    pub async fn send(&self, event: Queued) {
        if self.tx.send(event).await.is_err() {
            tracing::debug!("event not recorded: the operator is stopping");
        }
    }
}

impl Publisher {
    /// Waits, at most `limit`, until what was queued before the last sender was dropped is
    /// published.
    pub async fn finish_within(self, limit: Duration) {
        match tokio::time::timeout(limit, self.task).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the event publisher stopped"),
            Err(_) => tracing::warn!("stopping with events not yet published"),
        }
    }
}

/// Publishes one event. Failing to record an event never fails anything else.
async fn publish(recorder: Arc<EventRecorder>, q: Queued) {
    let note = Note {
        type_: q.type_,
        reason: &q.reason,
        action: &q.action,
        note: q.note,
    };
    match recorder.publish_at(&note, &q.regarding, q.at).await {
        Ok(()) => {}
        // (expected while the namespace goes; the job goes with it)
        Err(e) if is_namespace_terminating(&e) => {
            tracing::debug!(
                reason = q.reason,
                "event not recorded: the namespace is being deleted"
            );
        }
        Err(e) => tracing::warn!(error = %api_words(&e), reason = q.reason, "event not recorded"),
    }
}
