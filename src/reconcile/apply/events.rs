//! The events a pass records about its job (docs/behaviour.md §9): those the plan decided, and
//! what the writes did to its children, told in one event per kind of action: `Created pod:
//! a-worker-0` for one child (Kubeflow's words), `Created 100 pods: a-worker-0 … a-worker-99`
//! for many, so the events of a big job are O(1) per pass, not one per child. I/O (through
//! the event queue, `runtime::publisher`); the notes themselves are pure.

use kube::runtime::events::EventType as KubeEventType;

use jiff::Timestamp;

use super::Target;
use crate::error::{NOTE_LIMIT, bounded};
use crate::reconcile::plan::model::{EventNote, EventType};
use crate::runtime::publisher::Queued;

/// Record an event the plan decided on.
pub async fn record_planned(t: &Target<'_>, note: &EventNote) {
    let type_ = match note.type_ {
        EventType::Normal => KubeEventType::Normal,
        EventType::Warning => KubeEventType::Warning,
    };
    record(t, type_, &note.reason, note.message.clone()).await;
}

/// Record the pass's events, in their order.
pub async fn record_all(t: &Target<'_>, notes: &[EventNote]) {
    for note in notes {
        record_planned(t, note).await;
    }
}

/// Queue an event about the job, to be published behind the pass (`runtime::publisher`);
/// waits only while the queue is full. Failing to record an event never fails the reconcile.
pub async fn record(t: &Target<'_>, type_: KubeEventType, reason: &str, note: String) {
    // The recorder folds events with the same (reason, action) into one series, keeping the
    // first note: the note is the action, so distinct occurrences (two pods exiting) stay
    // distinct events and a repeated one (the same refusal) is one series.
    let action: String = note.chars().take(128).collect();
    let event = Queued {
        type_,
        reason: reason.to_string(),
        action,
        note: bounded(note, NOTE_LIMIT),
        regarding: t.job_ref.clone(),
        at: Timestamp::now(),
    };
    t.events.send(event).await;
}

/// The event for what a pass did to children of one kind (docs/behaviour.md §9): none for no
/// child, Kubeflow's `Created pod: <pod>` for one, `Created <n> pods: <names>` for more.
pub fn children_event(reason: &str, verb: &str, kind: &str, names: &[String]) -> Option<EventNote> {
    (!names.is_empty()).then(|| EventNote::normal(reason, children_note(verb, kind, names)))
}

/// Records `children_event` at once.
pub async fn record_children(
    t: &Target<'_>,
    reason: &str,
    verb: &str,
    kind: &str,
    names: &[String],
) {
    if names.is_empty() {
        return;
    }
    let note = children_note(verb, kind, names);
    record(t, KubeEventType::Normal, reason, note).await;
}

/// The note for `verb` (`Created`, `Deleted`) done to children of `kind` (`pod`, `service`)
/// named `names`; runs of consecutive indices of one replica type are shortened to
/// `first … last`, and the note is cut to an event's size.
pub fn children_note(verb: &str, kind: &str, names: &[String]) -> String {
    let note = match names {
        [one] => format!("{verb} {kind}: {one}"),
        many => format!("{verb} {} {kind}s: {}", many.len(), shortened(many)),
    };
    bounded(note, NOTE_LIMIT)
}

/// `names` in order of replica type and index, runs of three or more consecutive indices as
/// `first … last`.
fn shortened(names: &[String]) -> String {
    let mut keyed: Vec<(&str, Option<u64>, &str)> = names
        .iter()
        .map(|n| match n.rsplit_once('-') {
            Some((prefix, i)) if i.parse::<u64>().is_ok() => (prefix, i.parse().ok(), n.as_str()),
            _ => (n.as_str(), None, n.as_str()),
        })
        .collect();
    keyed.sort();
    let mut parts: Vec<String> = Vec::new();
    let mut run: Vec<&str> = Vec::new();
    let mut last: Option<(&str, u64)> = None;
    for (prefix, index, name) in keyed {
        let follows = matches!((last, index), (Some((p, l)), Some(i)) if p == prefix && i == l + 1);
        if !follows {
            flush(&mut run, &mut parts);
        }
        run.push(name);
        last = index.map(|i| (prefix, i));
    }
    flush(&mut run, &mut parts);
    parts.join(", ")
}

fn flush(run: &mut Vec<&str>, parts: &mut Vec<String>) {
    match run.as_slice() {
        [] => {}
        [first, .., last] if run.len() >= 3 => parts.push(format!("{first} … {last}")),
        short => parts.extend(short.iter().map(|n| n.to_string())),
    }
    run.clear();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn one_child_in_kubeflow_s_words_many_in_one_line() {
        let cases: [(&[&str], &str); 4] = [
            (&["d-worker-0"], "Created pod: d-worker-0"),
            (
                &["d-worker-1", "d-ps-0"],
                "Created 2 pods: d-ps-0, d-worker-1",
            ),
            (
                &[
                    "d-worker-2",
                    "d-worker-0",
                    "d-worker-1",
                    "d-chief-0",
                    "d-worker-7",
                ],
                "Created 5 pods: d-chief-0, d-worker-0 … d-worker-2, d-worker-7",
            ),
            (
                &["d-worker-9", "d-worker-10", "d-worker-11", "d-worker-8"],
                "Created 4 pods: d-worker-8 … d-worker-11",
            ),
        ];
        for (given, want) in cases {
            assert_eq!(children_note("Created", "pod", &names(given)), want);
        }
    }

    #[test]
    fn a_thousand_workers_fit_one_note() {
        let all: Vec<String> = (0..1000).map(|i| format!("big-worker-{i}")).collect();
        assert_eq!(
            children_note("Deleted", "service", &all),
            "Deleted 1000 services: big-worker-0 … big-worker-999"
        );
        let gaps: Vec<String> = (0..1000)
            .step_by(2)
            .map(|i| format!("big-worker-{i}"))
            .collect();
        let note = children_note("Created", "pod", &gaps);
        assert!(note.len() <= NOTE_LIMIT && note.ends_with("..."), "{note}");
        assert!(note.starts_with("Created 500 pods: big-worker-0, big-worker-2,"));
    }
}
