//! Events are recorded once per occurrence: the planner re-derives its notes from state on every
//! pass, so the controller remembers which notes it already recorded for each job. Pure data.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use jiff::{SignedDuration, Timestamp};

use super::plan::EventNote;

/// Notes of jobs untouched this long are forgotten (the job is most likely gone).
pub const FORGET_AFTER: SignedDuration = SignedDuration::from_hours(1);

/// (reason, message) pairs already recorded for one job, and when the job was last seen.
type Recorded = (BTreeSet<(String, String)>, Timestamp);

#[derive(Default, Debug)]
pub struct EventLog {
    jobs: Mutex<HashMap<String, Recorded>>,
}

impl EventLog {
    /// The notes not recorded before for this job; they are remembered as recorded.
    pub fn fresh(&self, job_uid: &str, notes: &[EventNote], now: Timestamp) -> Vec<EventNote> {
        let Ok(mut jobs) = self.jobs.lock() else {
            return notes.to_vec();
        };
        jobs.retain(|_, (_, touched)| *touched + FORGET_AFTER > now);
        let (seen, touched) = jobs.entry(job_uid.to_string()).or_default();
        *touched = now;
        notes
            .iter()
            .filter(|n| seen.insert((n.reason.clone(), n.message.clone())))
            .cloned()
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::plan::EventType;

    fn note(reason: &str, message: &str) -> EventNote {
        EventNote {
            type_: EventType::Normal,
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_note_is_fresh_once_per_job() {
        let log = EventLog::default();
        let now = Timestamp::from_second(1_700_000_000).unwrap();
        let notes = [
            note("TFJobSucceeded", "done"),
            note("ExitedWithCode", "Pod: ns.a exited with code 1"),
        ];
        assert_eq!(log.fresh("job", &notes, now).len(), 2);
        assert!(log.fresh("job", &notes, now).is_empty());
        assert_eq!(log.fresh("other", &notes[..1], now).len(), 1);
        let other_pod = note("ExitedWithCode", "Pod: ns.b exited with code 1");
        assert_eq!(log.fresh("job", &[other_pod], now).len(), 1);
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
