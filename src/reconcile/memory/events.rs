//! Events are recorded once per occurrence, not per reconcile. Some notes of the planner hold
//! for as long as a state lasts (a foreign object, a pod stuck pulling its image) and come back on
//! every pass; a pass retried after a failed status write re-derives the same transition. So a
//! note is recorded only when the previous pass of the job did not have it: a note that persists
//! is recorded once, and one that goes away and comes back (a second restart, a second
//! suspension) is a new occurrence and recorded again. Plain data, one log per job.

use std::collections::BTreeSet;

use crate::reconcile::plan::model::EventNote;

/// The (reason, message) pairs of a job's previous pass.
#[derive(Default, Debug)]
pub struct EventLog {
    previous: BTreeSet<(String, String)>,
}

impl EventLog {
    /// The notes of this pass that the previous pass did not have; this pass becomes the
    /// previous one.
    pub fn fresh(&mut self, notes: &[EventNote]) -> Vec<EventNote> {
        let key = |n: &EventNote| (n.reason.clone(), n.message.clone());
        let fresh = notes
            .iter()
            .filter(|n| !self.previous.contains(&key(n)))
            .cloned()
            .collect();
        self.previous = notes.iter().map(key).collect();
        fresh
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reconcile::plan::model::EventType;

    fn note(reason: &str, message: &str) -> EventNote {
        EventNote {
            type_: EventType::Normal,
            reason: reason.into(),
            message: message.into(),
        }
    }

    #[test]
    fn a_persisting_note_is_recorded_once_and_a_returning_one_again() {
        let mut log = EventLog::default();
        let stuck = note(
            "ImagePullBackOff",
            "Pod: ns.a container tensorflow is waiting",
        );
        let restarting = note(
            "TFJobRestarting",
            "job j is restarting because Worker replica(s) failed.",
        );
        let both = vec![stuck.clone(), restarting.clone()];
        let passes: [(Vec<EventNote>, usize); 6] = [
            (both.clone(), 2),
            (both, 0),                // same pass again (a retried write)
            (vec![stuck.clone()], 0), // the stuck pod persists
            (vec![], 0),              // both went away
            (vec![restarting], 1),    // a second restart: a new occurrence
            (vec![stuck], 1),         // stuck again
        ];
        for (i, (notes, want)) in passes.into_iter().enumerate() {
            assert_eq!(log.fresh(&notes).len(), want, "pass {i}");
        }
    }
}
