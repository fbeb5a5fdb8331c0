//! Events are recorded once per occurrence, not per reconcile. Some notes of the planner hold
//! for as long as a state lasts (a foreign object, a pod stuck pulling its image) and come back on
//! every pass; a pass retried after a failed status write re-derives the same transition. So a
//! note is recorded only when the previous pass of the job did not have it: a note that persists
//! is recorded once, and one that goes away and comes back (a second restart, a second
//! suspension) is a new occurrence and recorded again. Pure data.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

use super::model::EventNote;

/// Notes of jobs untouched this long are forgotten (the job is most likely gone).
pub const FORGET_AFTER: SignedDuration = SignedDuration::from_hours(1);

/// The (reason, message) pairs of a job's last pass, and when that pass was.
type Recorded = (BTreeSet<(String, String)>, Timestamp);

#[derive(Default, Debug)]
pub struct EventLog {
    jobs: Mutex<HashMap<String, Recorded>>,
}

impl EventLog {
    /// The notes of this pass that the job's previous pass did not have; this pass becomes the
    /// previous one.
    pub fn fresh(&self, job_uid: &str, notes: &[EventNote], now: Timestamp) -> Vec<EventNote> {
        let Ok(mut jobs) = self.jobs.lock() else {
            return notes.to_vec();
        };
        jobs.retain(|_, (_, touched)| *touched + FORGET_AFTER > now);
        let current: BTreeSet<(String, String)> = notes
            .iter()
            .map(|n| (n.reason.clone(), n.message.clone()))
            .collect();
        let (previous, touched) = jobs.entry(job_uid.to_string()).or_default();
        let fresh = notes
            .iter()
            .filter(|n| !previous.contains(&(n.reason.clone(), n.message.clone())))
            .cloned()
            .collect();
        *previous = current;
        *touched = now;
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::model::EventType;

    fn note(reason: &str, message: &str) -> EventNote {
        EventNote {
            type_: EventType::Normal,
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_persisting_note_is_recorded_once_and_a_returning_one_again() {
        let log = EventLog::default();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let stuck = note(
            "ImagePullBackOff",
            "Pod: ns.a container tensorflow is waiting",
        );
        let restarting = note(
            "TFJobRestarting",
            "job j is restarting because 1 Worker replica(s) failed.",
        );
        let passes: [(&[EventNote], usize); 6] = [
            (&[stuck.clone(), restarting.clone()], 2),
            (&[stuck.clone(), restarting.clone()], 0), // same pass again (a retried write)
            (&[stuck.clone()], 0),                     // the stuck pod persists
            (&[], 0),                                  // both went away
            (&[restarting.clone()], 1),                // a second restart: a new occurrence
            (&[stuck.clone()], 1),                     // stuck again
        ];
        for (i, (notes, want)) in passes.into_iter().enumerate() {
            assert_eq!(log.fresh("job", notes, now).len(), want, "pass {i}");
        }
        assert_eq!(
            log.fresh("other", &[stuck], now).len(),
            1,
            "jobs are independent"
        );
    }

    #[test]
    fn old_jobs_are_forgotten() {
        let log = EventLog::default();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let notes = [note("TFJobCreated", "x")];
        log.fresh("job", &notes, now);
        assert_eq!(
            log.fresh(
                "job",
                &notes,
                now + FORGET_AFTER + SignedDuration::from_secs(1)
            )
            .len(),
            1
        );
    }
}
