//! The job's clocks (docs/behaviour.md §6.5, §6.7): activeDeadlineSeconds from `startTime`,
//! ttlSecondsAfterFinished from `completionTime`, the startup deadline of
//! `tfjob-operator.dev/startup-deadline-seconds` from each replica's (re)start, and the delay
//! between whole-job attempts. None runs while the job is suspended. They report; the rules
//! say what a clock that ran out means. Pure: `now` is an argument.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::TFJobStatus;
use crate::crd::labels::child_name;
use crate::reconcile::plan::replicas::{Key, Phase, Replicas};
use crate::reconcile::plan::view::JobView;

/// A timer's state at `now`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timer {
    /// Not set, not started, or suspended.
    Off,
    /// Its moment has come (the moment itself counts as due).
    Due,
    /// Requeue for this exact moment rather than waiting for an unrelated event.
    At(Timestamp),
}

/// `startTime + activeDeadlineSeconds`.
pub fn deadline(view: &JobView<'_>, start_time: Option<&Time>) -> Timer {
    let seconds = view.run_policy().active_deadline_seconds;
    timer(view, start_time, seconds)
}

/// `completionTime + ttlSecondsAfterFinished`.
pub fn ttl(view: &JobView<'_>, completion_time: Option<&Time>) -> Timer {
    let seconds = view.run_policy().ttl_seconds_after_finished.map(i64::from);
    timer(view, completion_time, seconds)
}

fn timer(view: &JobView<'_>, from: Option<&Time>, seconds: Option<i64>) -> Timer {
    let (Some(Time(from)), Some(seconds)) = (from, seconds) else {
        return Timer::Off;
    };
    if view.suspended() {
        return Timer::Off;
    }
    // A moment beyond jiff's range never comes.
    match from.checked_add(SignedDuration::from_secs(seconds)) {
        Ok(at) if at <= view.now => Timer::Due,
        Ok(at) => Timer::At(at),
        Err(_) => Timer::Off,
    }
}

/// What the clocks of a running job say in this pass. They only report; what a late
/// replica means (the job fails, or restarts) is the restart engine's to decide.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Clocks {
    /// `activeDeadlineSeconds`.
    pub deadline: Timer,
    /// The startup deadline: when it falls due next.
    pub startup: Timer,
    /// The replica the startup deadline found late, if it is due.
    pub late: Option<Late>,
}

/// A replica not running within the startup deadline.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Late {
    pub key: Key,
    /// `pod j-worker-0 is not running: container tensorflow is waiting: ImagePullBackOff`.
    pub words: String,
    /// The deadline, in seconds.
    pub seconds: i64,
}

/// The clocks of a running job, from its status.
pub fn clocks(view: &JobView<'_>, children: &Replicas, status: &TFJobStatus) -> Clocks {
    let start = status.start_time.as_ref().map(|t| t.0);
    let since = start.into_iter().chain(attempt_starts(view, status)).max();
    let (startup, late) = startup(view, children, since);
    Clocks {
        deadline: deadline(view, status.start_time.as_ref()),
        startup,
        late,
    }
}

/// The startup deadline: every replica the job still needs must run within N seconds of
/// its (re)start. A replica's clock starts when its pod was created; a replica without a
/// pod (refused, or held during a whole-job restart) counts from `since`, the job's start or
/// the moment its latest whole-job restart's pods may be created. Returns the timer and,
/// when due, the late replica.
fn startup(
    view: &JobView<'_>,
    children: &Replicas,
    since: Option<Timestamp>,
) -> (Timer, Option<Late>) {
    let Some(seconds) = view.settings.startup_deadline_seconds else {
        return (Timer::Off, None);
    };
    if view.suspended() {
        return (Timer::Off, None);
    }
    let late = view.keys().into_iter().filter_map(|key| {
        if children.completed.contains(&key) {
            return None;
        }
        let pod = children.live_pod(key);
        if pod.is_some_and(|p| matches!(p.phase, Phase::Running | Phase::Succeeded)) {
            return None;
        }
        let from = pod.and_then(|p| p.created).into_iter().chain(since).max()?;
        let due = from.checked_add(SignedDuration::from_secs(seconds)).ok()?;
        let words = match pod {
            Some(p) => match &p.stuck {
                Some(stuck) => format!("pod {} is not running: {}", p.name, stuck.words()),
                None => format!("pod {} is not running ({:?})", p.name, p.phase),
            },
            None => format!("pod {} does not exist", child_name(view.name, key.0, key.1)),
        };
        Some((due, key, words))
    });
    match late.min_by_key(|(due, key, _)| (*due, *key)) {
        Some((due, key, words)) if due <= view.now => (
            Timer::Due,
            Some(Late {
                key,
                words,
                seconds,
            }),
        ),
        Some((due, ..)) => (Timer::At(due), None),
        None => (Timer::Off, None),
    }
}

/// The delay before the second attempt's pods are created, doubling per restart.
pub const FIRST_BACKOFF: SignedDuration = SignedDuration::from_secs(10);
/// The longest delay between attempts.
pub const MAX_BACKOFF: SignedDuration = SignedDuration::from_secs(300);

/// The wait before creating the pods of `attempt`: none for the first restart (one fault, an
/// OOM kill or an eviction, is worth an immediate retry), then 10 s doubling to 5 min, the
/// kubelet's CrashLoopBackOff: a job that keeps failing must not hold the scheduler and its
/// accelerators in a tight loop, and these are the numbers its users already know.
pub fn backoff(attempt: i32) -> SignedDuration {
    if attempt <= 1 {
        return SignedDuration::ZERO;
    }
    let doublings = (attempt - 2).min(10);
    (FIRST_BACKOFF * (1 << doublings)).min(MAX_BACKOFF)
}

/// When the pods of the current attempt may be created: the latest restart's decision plus
/// its delay (none before the first restart).
pub fn attempt_starts(view: &JobView<'_>, status: &TFJobStatus) -> Option<Timestamp> {
    let decided = status.restart_time.as_ref()?.0;
    decided.checked_add(backoff(view.attempt)).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_restart_is_immediate_then_the_delay_doubles_to_five_minutes() {
        let secs: Vec<i64> = (1..=8).map(|a| backoff(a).as_secs()).collect();
        assert_eq!(secs, [0, 10, 20, 40, 80, 160, 300, 300]);
        assert_eq!(backoff(i32::MAX), MAX_BACKOFF);
    }
}
