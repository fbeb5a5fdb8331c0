//! Freezing a client after its N-th write, to simulate an operator process killed right after a
//! write: the server counts the writes it carried out per user agent, and once an armed client
//! reaches its N-th, every later request of a matching client waits and is never carried out
//! (its watches deliver nothing) until the test unfreezes (no I/O; the server consults it on
//! every request).
use std::collections::BTreeMap;
use std::sync::Mutex;

use tokio::sync::{MutexGuard, watch};

#[derive(Default)]
struct Armed {
    /// User-agent substring and the writes left before the freeze.
    rule: Option<(String, u64)>,
}

pub struct Freeze {
    armed: Mutex<Armed>,
    /// Writes carried out (answered 2xx by the handler) by full user agent.
    writes: Mutex<BTreeMap<String, u64>>,
    /// The user-agent substring currently frozen.
    frozen: watch::Sender<Option<String>>,
    /// Writes of an armed client run one at a time, so exactly N of them take effect even when
    /// the client sends several at once.
    serial: tokio::sync::Mutex<()>,
}

impl Default for Freeze {
    fn default() -> Self {
        Self {
            armed: Mutex::new(Armed::default()),
            writes: Mutex::new(BTreeMap::new()),
            frozen: watch::channel(None).0,
            serial: tokio::sync::Mutex::new(()),
        }
    }
}

fn matches(needle: Option<&String>, user_agent: &str) -> bool {
    needle.is_some_and(|n| user_agent.contains(n.as_str()))
}

impl Freeze {
    fn armed(&self) -> std::sync::MutexGuard<'_, Armed> {
        self.armed.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// Freeze clients whose user agent contains `needle` after `n` more writes (0 = at once).
    pub fn arm(&self, needle: &str, n: u64) {
        if n == 0 {
            self.armed().rule = None;
            self.frozen.send_replace(Some(needle.to_string()));
        } else {
            self.armed().rule = Some((needle.to_string(), n));
        }
    }
    /// Disarm and thaw: waiting requests wake up (the server then drops them), later ones are
    /// served.
    pub fn unfreeze(&self) {
        self.armed().rule = None;
        self.frozen.send_replace(None);
    }
    pub fn is_frozen(&self, user_agent: &str) -> bool {
        matches(self.frozen.borrow().as_ref(), user_agent)
    }
    /// Returns once `user_agent` is not (or no longer) frozen.
    pub async fn wait_thawed(&self, user_agent: &str) {
        let mut rx = self.frozen.subscribe();
        let _ = rx.wait_for(|f| !matches(f.as_ref(), user_agent)).await;
    }
    /// For a write of an armed client: the turn to run it (others wait); None otherwise.
    pub async fn turn(&self, user_agent: &str) -> Option<MutexGuard<'_, ()>> {
        let armed = matches(self.armed().rule.as_ref().map(|(n, _)| n), user_agent);
        if armed {
            Some(self.serial.lock().await)
        } else {
            None
        }
    }
    /// A write of `user_agent` was carried out; freezes it if it was the armed client's last.
    pub fn record_write(&self, user_agent: &str) {
        *self
            .writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(user_agent.to_string())
            .or_default() += 1;
        let mut armed = self.armed();
        if let Some((needle, left)) = armed.rule.as_mut()
            && user_agent.contains(needle.as_str())
        {
            *left = left.saturating_sub(1);
            if *left == 0 {
                let needle = needle.clone();
                armed.rule = None;
                self.frozen.send_replace(Some(needle));
            }
        }
    }
    /// Writes carried out by clients whose user agent contains `needle`.
    pub fn writes_by(&self, needle: &str) -> u64 {
        self.writes
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .filter(|(ua, _)| ua.contains(needle))
            .map(|(_, n)| n)
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn freezes_the_matching_client_after_its_nth_write() {
        let f = Freeze::default();
        f.arm("operator-a", 2);
        // (user agent of a write, frozen afterwards: operator-a, operator-b)
        let steps = [
            ("tfjob-operator-a/1", false, false),
            ("tfjob-operator-b/1", false, false),
            ("kubectl/v1.32", false, false),
            ("tfjob-operator-a/1", true, false),
        ];
        for (ua, a, b) in steps {
            f.record_write(ua);
            assert_eq!(
                (
                    f.is_frozen("x tfjob-operator-a/1"),
                    f.is_frozen("tfjob-operator-b/1")
                ),
                (a, b),
                "after a write of {ua}"
            );
        }
        assert_eq!(f.writes_by("operator-a"), 2);
        assert_eq!(f.writes_by("tfjob-operator"), 3);
        f.unfreeze();
        assert!(!f.is_frozen("tfjob-operator-a/1"));
        f.arm("operator-b", 0);
        assert!(f.is_frozen("tfjob-operator-b/1"), "n = 0 freezes at once");
    }
}
