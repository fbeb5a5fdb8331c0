//! Delayed delivery of watch events: per-resource latency ranges drawn from a seeded source, and
//! the per-stream queue that applies them without ever reordering one stream (a real API server
//! keeps each watch in resourceVersion order, but streams of different kinds drift apart). Pure
//! but for the clock the caller passes in.
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::rng::Rng;

/// Latency ranges by resource plural ("" = every resource), shared by all watch streams.
pub struct WatchDelays {
    ranges: Mutex<BTreeMap<String, (Duration, Duration)>>,
    rng: Rng,
}

impl WatchDelays {
    pub fn new(seed: u64) -> Self {
        Self {
            ranges: Mutex::new(BTreeMap::new()),
            // Its own sequence, so adding delays does not shift the fault draws.
            rng: Rng::new(seed ^ 0x00DE_1A75),
        }
    }
    /// Delay events of `resource` (a plural such as "pods"; None = every resource) by a uniform
    /// latency in [min, max]; a resource's own range wins over the catch-all one.
    pub fn set(&self, resource: Option<&str>, min: Duration, max: Duration) {
        self.lock()
            .insert(resource.unwrap_or("").to_string(), (min, max.max(min)));
    }
    pub fn clear(&self) {
        self.lock().clear();
    }
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, (Duration, Duration)>> {
        self.ranges.lock().unwrap_or_else(|e| e.into_inner())
    }
    /// The delay of one event of `resource` (zero when no range applies).
    pub fn draw(&self, resource: &str) -> Duration {
        let range = {
            let ranges = self.lock();
            ranges.get(resource).or_else(|| ranges.get("")).copied()
        };
        range.map_or(Duration::ZERO, |(lo, hi)| self.rng.between(lo, hi))
    }
}

/// One stream's events in flight: first in, first out, each leaving no earlier than its own
/// ready time (so a short delay behind a long one waits for it).
pub struct Pending<T> {
    queue: VecDeque<(Instant, T)>,
}

impl<T> Default for Pending<T> {
    fn default() -> Self {
        Self {
            queue: VecDeque::new(),
        }
    }
}

impl<T> Pending<T> {
    pub fn push(&mut self, item: T, ready: Instant) {
        let ready = self
            .queue
            .back()
            .map_or(ready, |(last, _)| ready.max(*last));
        self.queue.push_back((ready, item));
    }
    /// The next item whose time has come, in arrival order.
    pub fn pop_ready(&mut self, now: Instant) -> Option<T> {
        if self.queue.front().is_some_and(|(t, _)| *t <= now) {
            return self.queue.pop_front().map(|(_, item)| item);
        }
        None
    }
    pub fn next_ready(&self) -> Option<Instant> {
        self.queue.front().map(|(t, _)| *t)
    }
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stream_keeps_its_order_whatever_the_delays() {
        let t0 = Instant::now();
        let ms = |n: u64| t0 + Duration::from_millis(n);
        let mut p = Pending::default();
        // (item, ready) pushed in order; (now, items out) checked in order.
        for (item, ready) in [(1, 50), (2, 10), (3, 0), (4, 80)] {
            p.push(item, ms(ready));
        }
        let steps: [(u64, &[i32]); 4] = [(5, &[]), (49, &[]), (50, &[1, 2, 3]), (80, &[4])];
        for (now, want) in steps {
            let mut out = Vec::new();
            while let Some(i) = p.pop_ready(ms(now)) {
                out.push(i);
            }
            assert_eq!(out, want, "at {now}ms");
        }
        assert!(p.is_empty() && p.next_ready().is_none());
    }

    #[test]
    fn ranges_by_resource_with_a_catch_all() {
        let d = WatchDelays::new(1);
        let ms = Duration::from_millis;
        assert_eq!(d.draw("pods"), Duration::ZERO);
        d.set(Some("pods"), ms(10), ms(20));
        d.set(None, ms(1), ms(1));
        // (resource, min, max)
        for (resource, lo, hi) in [("pods", 10, 20), ("services", 1, 1), ("tfjobs", 1, 1)] {
            for _ in 0..20 {
                let x = d.draw(resource);
                assert!(ms(lo) <= x && x <= ms(hi), "{resource}: {x:?}");
            }
        }
        d.clear();
        assert_eq!(d.draw("pods"), Duration::ZERO);
    }
}
