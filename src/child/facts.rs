//! The rules that draw a pod's facts from its status (phase, conditions, container states),
//! written once and applied both to the watch's JSON (`wire`) and to k8s `Pod`s
//! (`from_object`), each of which hands its status over as borrowed views. Pure.

use jiff::Timestamp;

use crate::crd::defaults::TF_CONTAINER;

/// A pod's phase as the decision core needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    Pending,
    Running,
    Succeeded,
    Failed,
    /// No or an unrecognised phase (e.g. node unreachable).
    Unknown,
}

impl Phase {
    /// Succeeded or Failed: the pod will not run again.
    pub fn is_finished(self) -> bool {
        matches!(self, Phase::Succeeded | Phase::Failed)
    }

    fn of(phase: Option<&str>) -> Self {
        match phase {
            Some("Pending") => Phase::Pending,
            Some("Running") => Phase::Running,
            Some("Succeeded") => Phase::Succeeded,
            Some("Failed") => Phase::Failed,
            _ => Phase::Unknown,
        }
    }
}

/// Why a pod cannot start, in Kubernetes' words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stuck {
    /// The waiting container; none when the pod is not scheduled.
    pub container: Option<String>,
    /// `ImagePullBackOff`, `CreateContainerConfigError`, `Unschedulable`, ...
    pub reason: String,
    /// The kubelet's or the scheduler's message.
    pub message: Option<String>,
}

impl Stuck {
    /// `container tensorflow is waiting: ImagePullBackOff: Back-off pulling image "x"`, or
    /// `Unschedulable: 0/1 nodes are available: ...`.
    pub fn words(&self) -> String {
        let message = self
            .message
            .as_deref()
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        match &self.container {
            Some(c) => format!("container {c} is waiting: {}{message}", self.reason),
            None => format!("{}{message}", self.reason),
        }
    }
}

/// A pod condition, borrowed from wherever it was read.
pub struct ConditionView<'a> {
    pub type_: &'a str,
    pub status: &'a str,
    pub reason: Option<&'a str>,
    pub message: Option<&'a str>,
}

/// A container's terminated state, borrowed.
#[derive(Clone, Copy)]
pub struct EndView<'a> {
    pub exit_code: i32,
    pub reason: Option<&'a str>,
    pub finished: Option<Timestamp>,
}

/// A container's status, borrowed: restarts, why it waits, how it (or its last run) ended.
pub struct ContainerView<'a> {
    pub name: &'a str,
    pub restart_count: i32,
    /// (reason, message) of its waiting state.
    pub waiting: Option<(Option<&'a str>, Option<&'a str>)>,
    pub terminated: Option<EndView<'a>>,
    pub last_terminated: Option<EndView<'a>>,
}

/// What the rules read of a pod's status.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusFacts {
    pub phase: Phase,
    pub exit_code: Option<i32>,
    pub restart_count: i32,
    pub stuck: Option<Stuck>,
    pub reason: Option<String>,
    pub exit_reason: Option<String>,
    pub disruption: Option<String>,
    pub finished: Option<Timestamp>,
}

impl Default for StatusFacts {
    fn default() -> Self {
        Self {
            phase: Phase::Unknown,
            exit_code: None,
            restart_count: 0,
            stuck: None,
            reason: None,
            exit_reason: None,
            disruption: None,
            finished: None,
        }
    }
}

/// Pod reasons that name a disruption, from kubelets and node controllers that predate the
/// `DisruptionTarget` condition (or set it beside them).
const DISRUPTION_REASONS: [&str; 3] = ["Evicted", "NodeLost", "Preempting"];

/// Waiting reasons that do not go away by themselves: the image, the config or the program
/// is wrong. (`ContainerCreating` and `PodInitializing` are ordinary waits.)
const STUCK_REASONS: [&str; 6] = [
    "ImagePullBackOff",
    "ErrImagePull",
    "InvalidImageName",
    "CreateContainerConfigError",
    "CreateContainerError",
    "CrashLoopBackOff",
];

/// The facts of a pod status: its `phase` and `reason`, its conditions and its containers'
/// statuses.
pub fn status_facts<'a>(
    phase: Option<&str>,
    reason: Option<&str>,
    conditions: impl IntoIterator<Item = ConditionView<'a>>,
    containers: impl IntoIterator<Item = ContainerView<'a>>,
) -> StatusFacts {
    let (unscheduled, disruption_condition) = kept_conditions(conditions);
    let mut restart_count = 0;
    let mut stuck = None;
    let mut tf_end = None;
    let mut tf_current_end = None;
    for c in containers {
        restart_count += c.restart_count.max(0);
        stuck = stuck.or_else(|| stuck_container(&c));
        if c.name == TF_CONTAINER && tf_end.is_none() {
            tf_end = c.terminated.or(c.last_terminated);
            tf_current_end = c.terminated.and_then(|t| t.finished);
        }
    }
    let exit_reason = tf_end.and_then(|t| t.reason).map(str::to_string);
    let disruption = disruption_condition.or_else(|| {
        reason
            .filter(|r| DISRUPTION_REASONS.contains(r))
            .map(str::to_string)
    });
    StatusFacts {
        phase: Phase::of(phase),
        exit_code: tf_end.map(|t| t.exit_code),
        restart_count,
        stuck: stuck.or(unscheduled),
        reason: reason.map(str::to_string).or_else(|| exit_reason.clone()),
        exit_reason,
        disruption,
        finished: tf_current_end,
    }
}

/// The two conditions the rules read: the first `PodScheduled` False, when its reason is
/// `Unschedulable` (no node fits the pod: the scheduler's message), and the first
/// `DisruptionTarget` True (its reason, `DisruptionTarget` when it gives none). This is the
/// one place that reads `PodScheduled`.
fn kept_conditions<'a>(
    conditions: impl IntoIterator<Item = ConditionView<'a>>,
) -> (Option<Stuck>, Option<String>) {
    let mut scheduled_false = None;
    let mut disruption = None;
    for c in conditions {
        match (c.type_, c.status) {
            ("PodScheduled", "False") if scheduled_false.is_none() => {
                scheduled_false = Some((c.reason, c.message));
            }
            ("DisruptionTarget", "True") if disruption.is_none() => {
                disruption = Some(c.reason.unwrap_or("DisruptionTarget").to_string());
            }
            _ => {}
        }
    }
    let unscheduled = scheduled_false
        .filter(|(reason, _)| *reason == Some("Unschedulable"))
        .map(|(_, message)| Stuck {
            container: None,
            reason: "Unschedulable".into(),
            message: message.map(str::to_string),
        });
    (unscheduled, disruption)
}

fn stuck_container(c: &ContainerView<'_>) -> Option<Stuck> {
    let (reason, message) = c.waiting?;
    let reason = reason?;
    STUCK_REASONS.contains(&reason).then(|| Stuck {
        container: Some(c.name.to_string()),
        reason: reason.to_string(),
        message: message.map(str::to_string),
    })
}
