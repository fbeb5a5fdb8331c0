//! What the controller remembers about each job between passes, in one place with one way to
//! forget it: its own writes the caches may not show yet (`pending`), the events of the
//! previous pass (`events`), the refusal of its last creates, the status it last wrote, and
//! its consecutive failures. A job's memory is dropped when the job is deleted (seen by the
//! job watch, or by its absence from a relist), so nothing grows over the operator's
//! lifetime. Plain data behind one `Mutex`: no I/O, but shared by every pass, so not pure.

pub mod events;
pub mod pending;

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};

use crate::reconcile::plan::model::Refusal;
use events::EventLog;
use pending::Pending;

/// One job's memory.
#[derive(Default, Debug)]
pub struct JobMemory {
    /// Children this operator created or deleted that the caches may not show yet.
    pub pending: Pending,
    /// Events of the previous pass, so each occurrence is recorded once.
    pub events: EventLog,
    /// Why the API server refused the job's last creates (none when they all went through):
    /// the next pass tells it in `ReplicaFailure`.
    pub refused: Option<Refusal>,
    /// (resourceVersion the last status write replaced, resourceVersion it produced): a
    /// cached job still at the first predates our own write, and planning on it would redo
    /// what that pass did.
    written: Option<(String, String)>,
    /// Reconciles failed in a row, for the retry backoff.
    failures: u32,
    /// The API server refused a create because the job's namespace is being deleted: no more
    /// creates or events for this job (a terminating namespace never comes back; the job goes
    /// with it, and this memory with the job).
    pub namespace_terminating: bool,
}

impl JobMemory {
    /// Records a status write that turned `before` into `after`. A write that changed
    /// nothing keeps the resourceVersion (the API server does not store a no-op update): there
    /// is nothing to wait for, and recording it would hold every later pass for good.
    pub fn wrote_status(&mut self, before: String, after: String) {
        self.written = (before != after).then_some((before, after));
    }

    /// Whether the cached job at `resource_version` is older than our last status write.
    /// Once the cache has moved past it, the record is no longer needed.
    pub fn predates_our_write(&mut self, resource_version: &str) -> bool {
        match &self.written {
            Some((before, _)) if before == resource_version => true,
            Some(_) => {
                self.written = None;
                false
            }
            None => false,
        }
    }

    /// One more failure in a row; returns how many.
    pub fn failed(&mut self) -> u32 {
        self.failures = self.failures.saturating_add(1);
        self.failures
    }

    pub fn succeeded(&mut self) {
        self.failures = 0;
    }
}

/// Every job's memory, by job uid (a re-created job with the same name starts afresh).
#[derive(Default, Debug)]
pub struct Memory {
    jobs: Mutex<HashMap<String, JobMemory>>,
}

impl Memory {
    /// Runs `f` on the job's memory, creating it on first use.
    pub fn with<R>(&self, job_uid: &str, f: impl FnOnce(&mut JobMemory) -> R) -> R {
        f(self.lock().entry(job_uid.to_string()).or_default())
    }

    /// The job is gone: drop everything remembered about it.
    pub fn forget(&self, job_uid: &str) {
        self.lock().remove(job_uid);
    }

    /// How many jobs are remembered.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// A panic while holding the lock cannot leave a job's memory half-written in a way
    /// that matters more than stopping the operator would, so a poisoned lock is used as is.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, JobMemory>> {
        self.jobs
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_write_marks_the_view_it_replaced_as_stale_until_the_cache_moves_on() {
        let mut m = JobMemory::default();
        assert!(!m.predates_our_write("5"));
        m.wrote_status("5".into(), "6".into());
        assert!(
            m.predates_our_write("5"),
            "the cache still shows what we wrote over"
        );
        assert!(!m.predates_our_write("6"), "the cache caught up");
        assert!(!m.predates_our_write("5"), "the record is gone once met");
    }

    #[test]
    fn a_status_write_the_api_server_kept_as_a_no_op_holds_no_pass() {
        let mut m = JobMemory::default();
        m.wrote_status("5".into(), "5".into());
        assert!(!m.predates_our_write("5"));
    }

    #[test]
    fn failures_count_up_and_reset() {
        let mut m = JobMemory::default();
        assert_eq!((m.failed(), m.failed()), (1, 2));
        m.succeeded();
        assert_eq!(m.failed(), 1);
    }

    #[test]
    fn a_forgotten_job_leaves_nothing_behind() {
        let memory = Memory::default();
        memory.with("a", |m| m.wrote_status("1".into(), "2".into()));
        memory.with("b", |m| {
            m.failed();
        });
        assert_eq!(memory.len(), 2);
        memory.forget("a");
        memory.forget("b");
        assert!(memory.is_empty());
        assert!(
            !memory.with("a", |m| m.predates_our_write("1")),
            "starts afresh"
        );
    }
}
