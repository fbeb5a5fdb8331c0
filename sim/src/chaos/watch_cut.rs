//! Cut watch connections: every open watch (a dropped network, an API server restart), or only
//! the watches of some resources (one of the API server's per-resource watch caches reset while
//! the others stay). Clients re-watch from their last resourceVersion. No I/O.
use std::collections::BTreeSet;
use std::sync::Arc;

use tokio::sync::watch;

/// The latest cut: which resources' watches it ended (None = all).
#[derive(Clone, Debug, Default)]
struct Cut {
    only: Option<Arc<BTreeSet<String>>>,
}

/// Where cuts are announced, shared by every watch stream.
pub struct WatchCuts {
    tx: watch::Sender<Cut>,
}

impl Default for WatchCuts {
    fn default() -> Self {
        Self {
            tx: watch::channel(Cut::default()).0,
        }
    }
}

impl WatchCuts {
    /// End every open watch.
    pub fn all(&self) {
        self.tx.send_replace(Cut { only: None });
    }

    /// End the open watches of these resources (plurals such as "pods"), and no other.
    pub fn of(&self, plurals: &[&str]) {
        let only = plurals.iter().map(|p| p.to_string()).collect();
        self.tx.send_replace(Cut {
            only: Some(Arc::new(only)),
        });
    }

    /// What a watch of `plural` listens to.
    pub fn subscribe(&self, plural: &str) -> CutSignal {
        CutSignal {
            rx: self.tx.subscribe(),
            plural: plural.to_string(),
        }
    }
}

/// One watch stream's end of the announcements.
#[derive(Clone)]
pub struct CutSignal {
    rx: watch::Receiver<Cut>,
    plural: String,
}

impl CutSignal {
    /// Resolves at the first cut that ends this stream (never if the server is gone).
    pub async fn cut(&mut self) {
        loop {
            if self.rx.changed().await.is_err() {
                return std::future::pending().await;
            }
            let cut = self.rx.borrow_and_update().clone();
            if cut.only.is_none_or(|only| only.contains(&self.plural)) {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    async fn ends(signal: &mut CutSignal) -> bool {
        tokio::time::timeout(Duration::from_millis(50), signal.cut())
            .await
            .is_ok()
    }

    #[tokio::test]
    async fn a_cut_of_one_resource_ends_its_watches_and_no_other() {
        let cuts = WatchCuts::default();
        let (mut pods, mut services) = (cuts.subscribe("pods"), cuts.subscribe("services"));
        cuts.of(&["pods"]);
        assert!(ends(&mut pods).await, "the pods' watch ends");
        assert!(!ends(&mut services).await, "the services' watch stays");
        cuts.all();
        assert!(ends(&mut services).await && ends(&mut pods).await);
    }
}
