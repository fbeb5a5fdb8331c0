//! client-go's work-queue metrics (`workqueue_*`) for the passes of kube-runtime's controller.
//! No I/O.
//!
//! kube-runtime keeps its queue (the scheduler of triggered and delayed jobs) to itself, so
//! this is a ledger of what we see around it, counted the way client-go counts its queue:
//! - a job is *waiting* from the first trigger we hand to the controller (a TFJob event, a
//!   child waking its owner) until kube starts its pass; triggers for a job already waiting
//!   fold into one, like client-go's dirty set (`workqueue_adds_total` counts the first only);
//! - a started pass waits again for one of the `--concurrency` turns (`Context::turns`): that
//!   wait is queue time too, as client-go's items wait for a free worker;
//! - a pass is *working* from its turn to its end (`workqueue_work_duration_seconds`).
//!
//! What is approximate (docs/metrics.md): a requeue the pass asks for (a deadline, an error's
//! backoff) is counted as an add when it is asked for, not when kube fires it, and is not in
//! the depth while it waits for its time (in client-go delayed items are not either); a job
//! triggered while its own pass runs counts as waiting at once (client-go, from the pass's end).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeLabelSet, EncodeMetric};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use super::controller::ControllerLabels;

/// controller-runtime's labels of a queue: its name and its controller's (the same there).
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QueueLabels {
    pub name: &'static str,
    pub controller: &'static str,
}

/// A job, by namespace and name.
type Key = (String, String);

#[derive(Debug, Default)]
struct Ledger {
    /// Jobs triggered whose pass kube has not started, since their first trigger.
    waiting: HashMap<Key, Instant>,
    /// Passes started, waiting for a turn.
    turn_waits: usize,
    /// Passes holding a turn, by pass number: when each got it.
    working: BTreeMap<u64, Instant>,
    next_pass: u64,
    /// Set once a controller runs: a standby replica has no queue to report.
    started: bool,
}

type Histograms = Family<QueueLabels, Histogram, fn() -> Histogram>;

/// One controller's work queue, as client-go would report it.
#[derive(Clone, Debug)]
pub struct WorkQueue {
    ledger: Arc<Mutex<Ledger>>,
    labels: QueueLabels,
    adds: Family<QueueLabels, Counter>,
    retries: Family<QueueLabels, Counter>,
    queue_duration: Histograms,
    work_duration: Histograms,
}

/// client-go's buckets: 10 ns to 1000 s, by tens.
fn queue_buckets() -> Histogram {
    Histogram::new(exponential_buckets(10e-9, 10.0, 12))
}

impl WorkQueue {
    /// The queue of controller `name`, its metrics registered in `registry`.
    pub fn register(registry: &mut Registry, name: &'static str) -> Self {
        let queue = Self {
            ledger: Arc::default(),
            labels: QueueLabels {
                name,
                controller: name,
            },
            adds: Family::default(),
            retries: Family::default(),
            queue_duration: Family::new_with_constructor(queue_buckets),
            work_duration: Family::new_with_constructor(queue_buckets),
        };
        // prometheus-client appends `_total` to counters.
        registry.register(
            "workqueue_adds",
            "Total number of adds handled by workqueue",
            queue.adds.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of items added to the workqueue with a non-zero delay (a pass's requeue after an error or at a deadline)",
            queue.retries.clone(),
        );
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in workqueue before being requested",
            queue.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from workqueue takes",
            queue.work_duration.clone(),
        );
        registry.register_collector(Box::new(QueueGauges(queue.clone())));
        queue
    }

    /// A controller runs: its series exist from now on, at zero.
    pub fn start(&self) {
        self.ledger().started = true;
        drop(self.adds.get_or_create(&self.labels));
        drop(self.retries.get_or_create(&self.labels));
        drop(self.queue_duration.get_or_create(&self.labels));
        drop(self.work_duration.get_or_create(&self.labels));
    }

    /// A trigger for the job `namespace/name` goes to the controller.
    pub fn add(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        let mut ledger = self.ledger();
        if let std::collections::hash_map::Entry::Vacant(entry) = ledger.waiting.entry(key) {
            entry.insert(Instant::now());
            self.adds.get_or_create(&self.labels).inc();
        }
    }

    /// A pass asked kube to run it again after a delay (an error's backoff, a deadline).
    pub fn requeued(&self) {
        self.adds.get_or_create(&self.labels).inc();
        self.retries.get_or_create(&self.labels).inc();
    }

    /// kube dropped the job's trigger: the job is gone from its cache.
    pub fn forget(&self, namespace: &str, name: &str) {
        let key = (namespace.to_string(), name.to_string());
        self.ledger().waiting.remove(&key);
    }

    /// kube started a pass for the job: it now waits for a turn.
    pub fn pass(&self, namespace: &str, name: &str) -> Pass {
        let key = (namespace.to_string(), name.to_string());
        let now = Instant::now();
        let mut ledger = self.ledger();
        let since = ledger.waiting.remove(&key).unwrap_or(now);
        ledger.turn_waits += 1;
        let number = ledger.next_pass;
        ledger.next_pass += 1;
        Pass {
            queue: self.clone(),
            number,
            queued: since,
            entered: now,
            working: None,
        }
    }

    fn ledger(&self) -> MutexGuard<'_, Ledger> {
        // A panic while holding the lock leaves only counts behind: keep counting.
        self.ledger.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// One pass, from kube starting it to its end (dropped).
#[derive(Debug)]
pub struct Pass {
    queue: WorkQueue,
    number: u64,
    /// Since when its job waited (its first trigger, or when kube started it).
    queued: Instant,
    entered: Instant,
    working: Option<Instant>,
}

impl Pass {
    /// The pass has its turn: its wait ends, its work begins.
    pub fn working(&mut self) {
        if self.working.is_some() {
            return;
        }
        let now = Instant::now();
        let queue = &self.queue;
        queue
            .queue_duration
            .get_or_create(&queue.labels)
            .observe((now - self.queued).as_secs_f64());
        let mut ledger = queue.ledger();
        ledger.turn_waits = ledger.turn_waits.saturating_sub(1);
        ledger.working.insert(self.number, now);
        self.working = Some(now);
    }

    /// Whether the pass got its turn.
    pub fn worked(&self) -> bool {
        self.working.is_some()
    }

    /// How long the pass has worked (or, without a turn, run).
    pub fn took(&self) -> Duration {
        self.working.unwrap_or(self.entered).elapsed()
    }
}

impl Drop for Pass {
    fn drop(&mut self) {
        let queue = &self.queue;
        let mut ledger = queue.ledger();
        match self.working {
            Some(since) => {
                ledger.working.remove(&self.number);
                drop(ledger);
                queue
                    .work_duration
                    .get_or_create(&queue.labels)
                    .observe(since.elapsed().as_secs_f64());
            }
            None => ledger.turn_waits = ledger.turn_waits.saturating_sub(1),
        }
    }
}

/// What one scrape reads of the ledger.
#[derive(Debug, PartialEq)]
pub struct Snapshot {
    pub depth: usize,
    /// Seconds of work in progress, summed over the passes working.
    pub unfinished: f64,
    /// Seconds the oldest pass working has worked.
    pub longest: f64,
    /// Passes working: controller-runtime's busy workers.
    pub active: usize,
}

impl WorkQueue {
    /// The gauges now; None before a controller runs.
    pub fn snapshot(&self) -> Option<Snapshot> {
        let now = Instant::now();
        let ledger = self.ledger();
        ledger.started.then(|| {
            let ages = ledger.working.values().map(|t| (now - *t).as_secs_f64());
            Snapshot {
                depth: ledger.waiting.len() + ledger.turn_waits,
                unfinished: ages.clone().fold(0.0, |sum, age| sum + age),
                longest: ages.fold(0.0, f64::max),
                active: ledger.working.len(),
            }
        })
    }
}

/// The gauges of a queue, read from its ledger at each scrape.
#[derive(Debug)]
struct QueueGauges(WorkQueue);

impl Collector for QueueGauges {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(now) = self.0.snapshot() else {
            return Ok(());
        };
        let gauges = [
            (
                "workqueue_depth",
                "Current depth of workqueue",
                now.depth as f64,
            ),
            (
                "workqueue_unfinished_work_seconds",
                "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
                now.unfinished,
            ),
            (
                "workqueue_longest_running_processor_seconds",
                "How many seconds has the longest running processor for workqueue been running",
                now.longest,
            ),
        ];
        for (name, help, value) in gauges {
            let gauge = ConstGauge::new(value);
            let mut metric = encoder.encode_descriptor(name, help, None, gauge.metric_type())?;
            gauge.encode(metric.encode_family(&self.0.labels)?)?;
        }
        let active = ConstGauge::new(now.active as i64);
        let mut metric = encoder.encode_descriptor(
            "controller_runtime_active_workers",
            "Number of currently used workers per controller",
            None,
            active.metric_type(),
        )?;
        let labels = ControllerLabels {
            controller: self.0.labels.controller,
        };
        active.encode(metric.encode_family(&labels)?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> (WorkQueue, Registry) {
        let mut registry = Registry::default();
        let queue = WorkQueue::register(&mut registry, "tfjob-controller");
        queue.start();
        (queue, registry)
    }

    #[test]
    fn triggers_for_a_waiting_job_fold_into_one_add() {
        let (queue, _) = queue();
        queue.add("ns", "a");
        queue.add("ns", "a");
        queue.add("ns", "b");
        assert_eq!(queue.snapshot().map(|s| s.depth), Some(2));
        assert_eq!(queue.adds.get_or_create(&queue.labels).get(), 2);
    }

    #[test]
    fn a_pass_waits_for_its_turn_then_works_then_leaves() {
        let (queue, _) = queue();
        queue.add("ns", "a");
        let mut pass = queue.pass("ns", "a");
        assert_eq!(
            queue.snapshot().map(|s| s.depth),
            Some(1),
            "waiting for a turn"
        );
        std::thread::sleep(Duration::from_millis(20));
        pass.working();
        let now = queue.snapshot().unwrap();
        assert_eq!((now.depth, now.active), (0, 1));
        assert!(
            now.longest >= 0.0 && now.unfinished == now.longest,
            "{now:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
        assert!(queue.snapshot().unwrap().longest >= 0.02);
        drop(pass);
        assert_eq!(
            queue.snapshot(),
            Some(Snapshot {
                depth: 0,
                unfinished: 0.0,
                longest: 0.0,
                active: 0,
            })
        );
        let waited = queue.queue_duration.get_or_create(&queue.labels).clone();
        let worked = queue.work_duration.get_or_create(&queue.labels).clone();
        let (sum, count) = histogram_sum_count(&waited);
        assert!(count == 1 && sum >= 0.02, "queue time {sum} over {count}");
        let (sum, count) = histogram_sum_count(&worked);
        assert!(count == 1 && sum >= 0.02, "work time {sum} over {count}");
    }

    #[test]
    fn a_pass_without_a_turn_leaves_no_wait_behind() {
        let (queue, _) = queue();
        drop(queue.pass("ns", "a"));
        assert_eq!(queue.snapshot().map(|s| s.depth), Some(0));
    }

    #[test]
    fn a_dropped_trigger_leaves_the_depth() {
        let (queue, _) = queue();
        queue.add("ns", "gone");
        queue.forget("ns", "gone");
        assert_eq!(queue.snapshot().map(|s| s.depth), Some(0));
    }

    #[test]
    fn delayed_requeues_are_adds_and_retries() {
        let (queue, _) = queue();
        queue.add("ns", "a");
        queue.requeued();
        assert_eq!(queue.adds.get_or_create(&queue.labels).get(), 2);
        assert_eq!(queue.retries.get_or_create(&queue.labels).get(), 1);
    }

    #[test]
    fn exports_client_go_names_with_name_and_controller_only_once_started() {
        let mut registry = Registry::default();
        let queue = WorkQueue::register(&mut registry, "tfjob-controller");
        let text = render(&registry);
        assert!(
            !text.contains("workqueue_depth{"),
            "a standby has no queue:\n{text}"
        );
        queue.start();
        let text = render(&registry);
        let labels = r#"{name="tfjob-controller",controller="tfjob-controller"}"#;
        for series in [
            "workqueue_depth",
            "workqueue_adds_total",
            "workqueue_retries_total",
            "workqueue_queue_duration_seconds_count",
            "workqueue_work_duration_seconds_count",
            "workqueue_unfinished_work_seconds",
            "workqueue_longest_running_processor_seconds",
        ] {
            assert!(
                text.contains(&format!("{series}{labels} 0")),
                "{series} missing:\n{text}"
            );
        }
        assert!(
            text.contains(r#"controller_runtime_active_workers{controller="tfjob-controller"} 0"#),
            "{text}"
        );
    }

    fn render(registry: &Registry) -> String {
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, registry).unwrap();
        out
    }

    /// A histogram's sum and count, read from its text form.
    fn histogram_sum_count(h: &Histogram) -> (f64, u64) {
        let mut registry = Registry::default();
        registry.register("h", "", h.clone());
        let text = render(&registry);
        let value = |suffix: &str| {
            text.lines()
                .find_map(|l| l.strip_prefix(&format!("h_{suffix} ")))
                .and_then(|v| v.parse::<f64>().ok())
                .unwrap_or(-1.0)
        };
        (value("sum"), value("count") as u64)
    }
}
