//! What every request handler can reach: the store, the injected faults, freezes and watch
//! delays, and the server's own settings (plain data, no I/O).
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use crate::chaos::faults::Faults;
use crate::chaos::freeze::Freeze;
use crate::chaos::watch_cut::WatchCuts;
use crate::chaos::watch_delay::WatchDelays;
use crate::store::Store;

/// What every request handler can reach.
pub struct State {
    pub store: Arc<Store>,
    pub faults: Arc<Faults>,
    /// Latency of watch event delivery, by resource.
    pub watch_delays: Arc<WatchDelays>,
    /// Clients frozen after their N-th write.
    pub freeze: Arc<Freeze>,
    pub addr: SocketAddr,
    pub bookmark_interval: Duration,
    /// Ends open watches (dropped connections, restarts, one resource's watch cache reset).
    pub watch_cuts: WatchCuts,
    /// Whether streaming lists are served (else refused as invalid, as Kubernetes 1.33 does).
    pub streaming_lists: bool,
    /// Streaming lists served.
    pub streamed_lists: std::sync::atomic::AtomicU64,
    /// Streaming lists whose initial events were all sent, by resource (plural).
    pub streamed_lists_done: Arc<std::sync::Mutex<std::collections::BTreeMap<String, u64>>>,
}
