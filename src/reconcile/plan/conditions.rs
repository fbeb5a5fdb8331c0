//! Condition bookkeeping (docs/behaviour.md §7.2): setting a condition, the flip rule, the
//! Running/Restarting exclusivity and the ordering by last change. Pure.

use jiff::Timestamp;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;

use crate::crd::{ConditionStatus, ConditionType, JobCondition, TFJobStatus};
use crate::reconcile::plan::model::EventNote;

/// The condition of type `t`, if present.
pub fn find(conditions: &[JobCondition], t: ConditionType) -> Option<&JobCondition> {
    conditions.iter().find(|c| c.type_ == t)
}

/// Whether a condition of type `t` is present with status True.
pub fn is_true(conditions: &[JobCondition], t: ConditionType) -> bool {
    find(conditions, t).is_some_and(|c| c.status == ConditionStatus::True)
}

/// Succeeded or Failed is True: the job is finished for good (terminal is terminal).
pub fn is_finished(status: &TFJobStatus) -> bool {
    is_true(&status.conditions, ConditionType::Succeeded)
        || is_true(&status.conditions, ConditionType::Failed)
}

/// What a condition should say.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wanted<'a> {
    pub type_: ConditionType,
    pub status: ConditionStatus,
    pub reason: &'a str,
    pub message: String,
}

impl<'a> Wanted<'a> {
    pub fn new(type_: ConditionType, status: bool, reason: &'a str, message: String) -> Self {
        let status = if status {
            ConditionStatus::True
        } else {
            ConditionStatus::False
        };
        Self {
            type_,
            status,
            reason,
            message,
        }
    }
}

/// A condition change a rule decides. The composer (`plan`) applies the changes of a pass in
/// the order the rules are consulted, which is also the order of the conditions list.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Change<'a> {
    pub wanted: Wanted<'a>,
    /// Only turn a True condition False, never add it (Running when a job ends, say).
    pub if_true: bool,
    /// Events recorded when the change takes effect (the condition is added or flips), so
    /// each transition is announced once.
    pub announce: Vec<EventNote>,
}

impl<'a> Change<'a> {
    /// Set the condition as wanted.
    pub fn to(wanted: Wanted<'a>) -> Self {
        Self {
            wanted,
            if_true: false,
            announce: Vec::new(),
        }
    }

    /// Turn the condition False, only if it is True now.
    pub fn clear(t: ConditionType, reason: &'a str, message: String) -> Self {
        Self {
            if_true: true,
            ..Self::to(Wanted::new(t, false, reason, message))
        }
    }

    pub fn announcing(mut self, note: EventNote) -> Self {
        self.announce.push(note);
        self
    }
}

/// Makes `changes` in order; returns the events of those that took effect.
pub fn change_all<'a>(
    conditions: &mut Vec<JobCondition>,
    changes: impl IntoIterator<Item = Change<'a>>,
    now: Timestamp,
) -> Vec<EventNote> {
    let mut announced = Vec::new();
    for change in changes {
        if change.if_true && !is_true(conditions, change.wanted.type_) {
            continue;
        }
        if set(conditions, change.wanted, now) {
            announced.extend(change.announce);
        }
    }
    announced
}

/// Sets a condition; returns true when it was added or its status flipped.
///
/// Re-setting a condition with the status it already has changes nothing — not the
/// reason, message or times — so repeated passes never rewrite the status (no churn, no
/// event). A flip (or an addition) moves it to the end of the list with fresh times, so the
/// list stays ordered by last change and `State` (the last condition) shows the latest.
/// Running and Restarting are exclusive: setting either removes the other.
pub fn set(conditions: &mut Vec<JobCondition>, wanted: Wanted<'_>, now: Timestamp) -> bool {
    if find(conditions, wanted.type_).is_some_and(|c| c.status == wanted.status) {
        return false;
    }
    let exclusive = match wanted.type_ {
        ConditionType::Running => Some(ConditionType::Restarting),
        ConditionType::Restarting => Some(ConditionType::Running),
        _ => None,
    };
    conditions.retain(|c| c.type_ != wanted.type_ && Some(c.type_) != exclusive);
    conditions.push(JobCondition {
        type_: wanted.type_,
        status: wanted.status,
        reason: Some(wanted.reason.to_string()),
        message: Some(wanted.message),
        last_update_time: Some(Time(now)),
        last_transition_time: Some(Time(now)),
    });
    true
}

/// The `ReplicaFailure` condition follows the pass's creates (docs/behaviour.md §13): a
/// refused create sets it True with the refusal's reason and message (the message is
/// updated in place when the refusal changes); a pass whose creates all went through, or
/// that had none to make, removes it, so the message clears once the cause is gone.
pub fn replica_failure(
    conditions: &mut Vec<JobCondition>,
    failure: Option<(&str, String)>,
    now: Timestamp,
) {
    present_while(conditions, ConditionType::ReplicaFailure, failure, now);
}

/// A condition that is True, with `(reason, message)`, while a state lasts, and absent
/// otherwise (`ReplicaFailure`, `Stuck`). A new reason or message updates it in place:
/// its transition time stays, its update time moves.
pub fn present_while(
    conditions: &mut Vec<JobCondition>,
    t: ConditionType,
    state: Option<(&str, String)>,
    now: Timestamp,
) {
    let Some((reason, message)) = state else {
        conditions.retain(|c| c.type_ != t);
        return;
    };
    let wanted = Wanted::new(t, true, reason, message);
    if set(conditions, wanted.clone(), now) {
        return;
    }
    if let Some(c) = conditions.iter_mut().find(|c| c.type_ == t)
        && (c.reason.as_deref() != Some(reason) || c.message.as_ref() != Some(&wanted.message))
    {
        c.reason = Some(reason.to_string());
        c.message = Some(wanted.message);
        c.last_update_time = Some(Time(now));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ConditionType::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    fn types(c: &[JobCondition]) -> Vec<(ConditionType, ConditionStatus)> {
        c.iter().map(|c| (c.type_, c.status)).collect()
    }

    #[test]
    fn set_rules() {
        use ConditionStatus::{False as F, True as T};
        struct Case {
            name: &'static str,
            before: Vec<(ConditionType, bool)>,
            set: (ConditionType, bool),
            flipped: bool,
            after: Vec<(ConditionType, ConditionStatus)>,
        }
        let cases = [
            Case {
                name: "added at the end",
                before: vec![(Created, true)],
                set: (Running, true),
                flipped: true,
                after: vec![(Created, T), (Running, T)],
            },
            Case {
                name: "same status changes nothing, order kept",
                before: vec![(Running, true), (Created, true)],
                set: (Running, true),
                flipped: false,
                after: vec![(Running, T), (Created, T)],
            },
            Case {
                name: "flip moves to the end",
                before: vec![(Running, true), (Created, true)],
                set: (Running, false),
                flipped: true,
                after: vec![(Created, T), (Running, F)],
            },
            Case {
                name: "Restarting removes Running",
                before: vec![(Created, true), (Running, true)],
                set: (Restarting, true),
                flipped: true,
                after: vec![(Created, T), (Restarting, T)],
            },
            Case {
                name: "Running removes Restarting",
                before: vec![(Created, true), (Restarting, true)],
                set: (Running, true),
                flipped: true,
                after: vec![(Created, T), (Running, T)],
            },
        ];
        for case in cases {
            let mut conds = Vec::new();
            for (i, (t, s)) in case.before.iter().enumerate() {
                set(
                    &mut conds,
                    Wanted::new(*t, *s, "R", "m".into()),
                    at(i as i64),
                );
            }
            let before = conds.clone();
            let flipped = set(
                &mut conds,
                Wanted::new(case.set.0, case.set.1, "New", "new".into()),
                at(100),
            );
            assert_eq!(flipped, case.flipped, "{}", case.name);
            assert_eq!(types(&conds), case.after, "{}", case.name);
            if !flipped {
                assert_eq!(conds, before, "{}: nothing may change", case.name);
            } else {
                let last = conds.last().unwrap();
                assert_eq!(
                    last.last_transition_time,
                    Some(Time(at(100))),
                    "{}",
                    case.name
                );
                assert_eq!(last.reason.as_deref(), Some("New"), "{}", case.name);
            }
        }
    }

    #[test]
    fn finished_means_succeeded_or_failed_true() {
        for (t, s, want) in [
            (Succeeded, true, true),
            (Failed, true, true),
            (Failed, false, false),
            (Running, true, false),
        ] {
            let mut status = TFJobStatus::default();
            set(
                &mut status.conditions,
                Wanted::new(t, s, "R", String::new()),
                at(0),
            );
            assert_eq!(is_finished(&status), want, "{t:?}={s}");
        }
    }

    #[test]
    fn replica_failure_is_set_updated_and_removed() {
        let mut c = Vec::new();
        set(
            &mut c,
            Wanted::new(Created, true, "TFJobCreated", "made".into()),
            at(1),
        );
        let quota =
            |n: i32| format!("Error creating pod a-worker-1: exceeded quota, used: pods={n}");
        replica_failure(&mut c, Some(("FailedCreatePod", quota(1))), at(2));
        assert_eq!(
            types(&c),
            [
                (Created, ConditionStatus::True),
                (ReplicaFailure, ConditionStatus::True)
            ]
        );
        let rf = find(&c, ReplicaFailure).unwrap().clone();
        assert_eq!(rf.reason.as_deref(), Some("FailedCreatePod"));
        assert_eq!(rf.message, Some(quota(1)));

        // the same refusal again: nothing changes (no status write)
        let before = c.clone();
        replica_failure(&mut c, Some(("FailedCreatePod", quota(1))), at(3));
        assert_eq!(c, before);

        // a different refusal: message and update time change, the transition time stays
        replica_failure(&mut c, Some(("FailedCreateService", quota(2))), at(4));
        let rf = find(&c, ReplicaFailure).unwrap();
        assert_eq!(rf.reason.as_deref(), Some("FailedCreateService"));
        assert_eq!(rf.message, Some(quota(2)));
        assert_eq!(rf.last_transition_time, Some(Time(at(2))));
        assert_eq!(rf.last_update_time, Some(Time(at(4))));

        // creates went through: the condition is gone
        replica_failure(&mut c, None, at(5));
        assert_eq!(types(&c), [(Created, ConditionStatus::True)]);
    }
}
