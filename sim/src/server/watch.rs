//! Watch streams: replay from a resourceVersion (or the current state), live events filtered by
//! namespace and selectors (with ADDED/DELETED when an object enters or leaves the selection),
//! bookmarks, initial-events-end, timeouts, 410 as an ERROR event, delayed delivery (network
//! I/O via a task).
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::SinkExt;
use futures::channel::mpsc;
use http::Response;
use serde_json::{Value, json};
use tokio::sync::broadcast::error::RecvError;

use super::respond::{self, Body};
use super::target::{Filter, Req, TableRequest, Target};
use crate::chaos::freeze::Freeze;
use crate::chaos::watch_cut::CutSignal;
use crate::chaos::watch_delay::Pending;
use crate::store::{ApiError, EventType, WatchEvent};

struct Watcher {
    target: Target,
    filter: Filter,
    table: Option<TableRequest>,
    tx: mpsc::Sender<Bytes>,
    /// Highest resourceVersion this watcher has seen (for bookmarks).
    progress: u64,
    /// The client's user agent and the freeze that may hold its deliveries.
    user_agent: String,
    freeze: Arc<Freeze>,
    cut: CutSignal,
}

impl Watcher {
    fn render(&self, obj: &Value) -> Value {
        let o = self.target.present(obj);
        match &self.table {
            None => o,
            Some(table) => table.render(&self.target, &[o], json!({})),
        }
    }
    async fn send(&mut self, kind: &str, object: Value) -> bool {
        // A frozen client receives nothing more; its stream ends when it is unfrozen (or
        // watches are dropped), and the client re-watches from the last event it got.
        if self.freeze.is_frozen(&self.user_agent) {
            let mut cut = self.cut.clone();
            tokio::select! {
                _ = self.freeze.wait_thawed(&self.user_agent) => {}
                _ = cut.cut() => {}
            }
            return false;
        }
        let mut line = serde_json::to_vec(&EventLine { kind, object }).unwrap_or_default();
        line.push(b'\n');
        self.tx.send(Bytes::from(line)).await.is_ok()
    }
    async fn bookmark(&mut self, initial_end: bool) -> bool {
        let mut md = json!({"resourceVersion": self.progress.to_string()});
        if initial_end {
            md["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let rt = &self.target.rt;
        let obj = json!({"kind": rt.kind, "apiVersion": rt.api_version(&self.target.version), "metadata": md});
        self.send("BOOKMARK", obj).await
    }
    /// Send one store event as this watcher sees it; false when the client is gone.
    async fn event(&mut self, ev: &WatchEvent) -> bool {
        self.progress = self.progress.max(ev.rv);
        if ev.resource != self.target.st.storage {
            return true;
        }
        let now = self.filter.matches(&ev.object);
        let before = ev.old.as_ref().is_some_and(|o| self.filter.matches(o));
        let kind = match ev.kind {
            EventType::Added if now => "ADDED",
            EventType::Deleted if now || before => "DELETED",
            EventType::Modified if now && before => "MODIFIED",
            EventType::Modified if now => "ADDED",
            EventType::Modified if before => "DELETED",
            _ => return true,
        };
        let obj = self.render(&ev.object);
        self.send(kind, obj).await
    }
}

/// A streaming list's injected latency is paid once per this many initial objects (the page
/// size of kube-rs's and client-go's paged lists).
const STREAMED_PAGE: usize = 500;

/// Start a watch; the response body streams until timeout, client hang-up or a forced drop.
pub(super) fn watch(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let filter = Filter::from_query(req.query, t)?;
    let q = req.query;
    let initial = q.flag("sendInitialEvents");
    if initial {
        if !req.state.streaming_lists {
            return Err(ApiError::new(
                422,
                "Invalid",
                "sendInitialEvents: Forbidden: sendInitialEvents is forbidden for watch unless the WatchList feature gate is enabled",
            ));
        }
        req.state
            .streamed_lists
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
    let from = match q.get("resourceVersion") {
        None | Some("0") => None,
        Some(_) if initial => None,
        Some(rv) => Some(
            rv.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {rv}")))?,
        ),
    };
    let bookmarks = q.flag("allowWatchBookmarks");
    let timeout = q
        .get("timeoutSeconds")
        .and_then(|s| s.parse::<u64>().ok())
        .map(Duration::from_secs);
    let (tx, rx) = mpsc::channel(256);
    let target = Target {
        rt: t.rt.clone(),
        st: t.st.clone(),
        version: t.version.clone(),
        ns: t.ns.clone(),
        all_namespaces: t.all_namespaces,
        name: None,
        sub: None,
    };
    let table = TableRequest::of(req)?;
    let mut cut = req.state.watch_cuts.subscribe(&t.rt.plural);
    let user_agent = req
        .headers
        .get(http::header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let mut w = Watcher {
        target,
        filter,
        table,
        tx,
        progress: 0,
        user_agent,
        freeze: req.state.freeze.clone(),
        cut: cut.clone(),
    };
    let sub = req.state.store.watch(&t.st.storage, from);
    let interval = req.state.bookmark_interval;
    let delays = req.state.watch_delays.clone();
    let plural = t.rt.plural.clone();
    let page_latency = req.page_latency;
    let streamed_done = req.state.streamed_lists_done.clone();
    tokio::spawn(async move {
        let mut sub = match sub {
            Ok(s) => s,
            Err(e) => {
                // kube-rs re-lists on this; an HTTP 410 instead would make it retry forever.
                w.send("ERROR", e.to_status()).await;
                return;
            }
        };
        w.progress = sub.rv;
        for (i, o) in std::mem::take(&mut sub.snapshot).into_iter().enumerate() {
            if i % STREAMED_PAGE == 0 && !page_latency.is_zero() {
                tokio::time::sleep(page_latency).await;
            }
            if w.filter.matches(&o) {
                let obj = w.render(&o);
                if !w.send("ADDED", obj).await {
                    return;
                }
            }
        }
        if initial && bookmarks {
            if !w.bookmark(true).await {
                return;
            }
            let mut done = streamed_done.lock().unwrap_or_else(|e| e.into_inner());
            *done.entry(plural.clone()).or_default() += 1;
        }
        for ev in std::mem::take(&mut sub.replay) {
            if !w.event(&ev).await {
                return;
            }
        }
        let deadline = timeout.map(|d| tokio::time::Instant::now() + d);
        let mut tick = tokio::time::interval(interval);
        tick.tick().await;
        // Events in flight. Every store event goes through it while it is not empty, other
        // kinds' too: they carry no payload here but advance the bookmark progress, which must
        // never pass an event not yet delivered.
        let mut pending: Pending<Arc<WatchEvent>> = Pending::default();
        loop {
            tokio::select! {
                ev = sub.rx.recv() => match ev {
                    Ok(ev) => {
                        let delay = if ev.resource == w.target.st.storage {
                            delays.draw(&plural)
                        } else {
                            Duration::ZERO
                        };
                        if delay.is_zero() && pending.is_empty() {
                            if !w.event(&ev).await { return }
                        } else {
                            pending.push(ev, tokio::time::Instant::now() + delay);
                        }
                    }
                    // Too slow or the store is gone: end the stream, the client re-watches.
                    Err(RecvError::Lagged(_)) | Err(RecvError::Closed) => return,
                },
                _ = sleep_until(pending.next_ready()) => {
                    while let Some(ev) = pending.pop_ready(tokio::time::Instant::now()) {
                        if !w.event(&ev).await { return }
                    }
                }
                _ = tick.tick(), if bookmarks => if !w.bookmark(false).await { return },
                _ = sleep_until(deadline) => return,
                _ = cut.cut() => return,
            }
        }
    });
    Ok(respond::stream(rx))
}

async fn sleep_until(deadline: Option<tokio::time::Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// One line of a watch stream, `type` first as the API server writes it. (A `json!` map sorts
/// its keys, which put `object` first: a client that reads the event type before its object,
/// as kube's does, then had to buffer every object whole before decoding it.)
#[derive(serde::Serialize)]
struct EventLine<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    object: Value,
}
