//! The job's two clocks (docs/behaviour.md §6.5): activeDeadlineSeconds from `startTime` and
//! ttlSecondsAfterFinished from `completionTime`. Neither runs while the job is suspended.
//! Pure: `now` is an argument.

use jiff::{SignedDuration, Timestamp};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

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
