//! A failed pass: the step that failed and why, for the log, the metric and the retry policy.

use crate::error::Error;

/// The steps of a pass that can fail, in its order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, strum::IntoStaticStr, strum::Display)]
#[strum(serialize_all = "snake_case")]
pub enum Step {
    /// Waiting for complete caches before observing.
    Observe,
    /// Reading the job's metadata.
    Decode,
    /// The Kueue mode's writes (`kueue::pass`).
    Kueue,
    WriteChildren,
    WriteStatus,
    DeleteJob,
}

/// A pass that failed at `step`.
#[derive(Debug, thiserror::Error)]
#[error("{step}: {source}")]
pub struct PassError {
    pub step: Step,
    #[source]
    pub source: Error,
}

impl Step {
    /// Turns a step's error into the pass's (for `map_err`).
    pub fn failed(self) -> impl FnOnce(Error) -> PassError {
        move |source| PassError { step: self, source }
    }
}

impl PassError {
    /// A low-cardinality label for the reconcile-error metric: the kind of error, in
    /// snake_case (`create_pod`, `write_status`, `caches_not_synced`, ...).
    pub fn metric_label(&self) -> &'static str {
        (&self.source).into()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_names_the_step_and_the_label_the_error() {
        let e = Step::Observe.failed()(Error::CachesNotSynced);
        assert_eq!(
            e.to_string(),
            "observe: the pod and service caches are not synced yet"
        );
        assert_eq!(e.metric_label(), "caches_not_synced");
        let e = Step::WriteChildren.failed()(Error::ChildChanged { name: "a".into() });
        assert_eq!(e.metric_label(), "child_changed");
        assert_eq!(
            e.to_string(),
            "write_children: a changed since the pass looked at it; not deleted"
        );
    }
}
