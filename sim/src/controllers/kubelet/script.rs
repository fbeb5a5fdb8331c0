//! A pod's simulation script, read from `sim.tfjob.dev/<key>` annotations (pure, no I/O).
//!
//! Unscripted, a container runs one second and exits 0, except in the pods of a TF parameter
//! server or evaluator (by the training operator's replica-type label): those run until
//! deleted, as on a real cluster, unless a key says how their run ends.

use std::collections::BTreeMap;

use serde_json::Value;

/// The annotation prefix of every script key.
pub const PREFIX: &str = "sim.tfjob.dev/";

/// The pod label the training operator sets to a replica's type, in lower case.
const REPLICA_TYPE_LABEL: &str = "training.kubeflow.org/replica-type";
/// Replica types whose process never ends by itself: a TF parameter server serves until it is
/// killed, an evaluator loops over the checkpoints.
const RUN_UNTIL_DELETED: [&str; 2] = ["ps", "evaluator"];
/// The keys that say how a run ends; any of them gives such a pod a run of `run-seconds`.
const ENDS_A_RUN: [&str; 6] = [
    "run-seconds",
    "exit-code",
    "oom",
    "evict",
    "fail-times",
    "restarts-then-succeed",
];

/// What the simulated kubelet does with one pod. `Default` = run 1s, every container exits 0.
#[derive(Clone, Debug, PartialEq)]
pub struct Script {
    /// Seconds each container runs before it exits (`run-seconds`, default 1); None = until the
    /// pod is deleted (unscripted PS and evaluator pods).
    pub run_seconds: Option<f64>,
    /// Seconds from scheduling to running (`start-seconds`, default 0).
    pub start_seconds: f64,
    /// Exit code of every container without its own (`exit-code`, default 0).
    pub exit_code: i32,
    /// Per-container exit codes (`exit-code.<container>`).
    pub exit_codes: BTreeMap<String, i32>,
    /// Containers are OOM-killed: exit 137, reason OOMKilled (`oom`).
    pub oom: bool,
    /// The pod is evicted when its run ends (`evict`): phase Failed, reason Evicted.
    pub evict: bool,
    /// Containers never start, waiting with this reason, e.g. ImagePullBackOff (`never-start`).
    pub never_start: Option<String>,
    /// Each container exits with its failing code this many times, then with 0 (`fail-times`,
    /// alias `restarts-then-succeed`). Counted per pod, by the container's restartCount.
    pub fail_times: u32,
    /// The pod is bound but not started while it carries `hold` (any value): a test attaches
    /// the pod's script and removes the hold in one write, so the outcome never races the
    /// start (the real tier's kwok stages honour the same key).
    pub hold: bool,
    /// The containers exit on SIGTERM with this code (`sigterm-exit-code`): a deleted pod's
    /// containers end at the kubelet's first look. None = PID 1 ignores SIGTERM (as `sleep`,
    /// `python` and TensorFlow do) and is SIGKILLed at the end of the grace period: 137 Error.
    pub sigterm_exit_code: Option<i32>,
    /// What the containers write to `/dev/termination-log` (`termination-message`): the
    /// kubelet copies it to `terminated.message` on every exit.
    pub termination_message: Option<String>,
}

impl Default for Script {
    fn default() -> Self {
        Script {
            run_seconds: Some(1.0),
            start_seconds: 0.0,
            exit_code: 0,
            exit_codes: BTreeMap::new(),
            oom: false,
            evict: false,
            never_start: None,
            fail_times: 0,
            hold: false,
            sigterm_exit_code: None,
            termination_message: None,
        }
    }
}

fn parse<T: std::str::FromStr>(key: &str, raw: &str) -> Result<T, String> {
    raw.trim()
        .parse()
        .map_err(|_| format!("annotation {PREFIX}{key}: invalid value {raw:?}"))
}

fn seconds(key: &str, raw: &str) -> Result<f64, String> {
    let s: f64 = parse(key, raw)?;
    if s.is_finite() && s >= 0.0 {
        Ok(s)
    } else {
        Err(format!("annotation {PREFIX}{key}: must be >= 0"))
    }
}

impl Script {
    /// Reads the script from the pod's annotations; Err names the bad annotation.
    pub fn from_pod(pod: &Value) -> Result<Self, String> {
        let mut script = Script::default();
        let empty = serde_json::Map::new();
        let annotations = pod
            .pointer("/metadata/annotations")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let replica_type = pod
            .pointer("/metadata/labels")
            .and_then(|l| l.get(REPLICA_TYPE_LABEL))
            .and_then(Value::as_str);
        let ends_given = annotations.keys().any(|name| {
            name.strip_prefix(PREFIX)
                .is_some_and(|k| ENDS_A_RUN.contains(&k) || k.starts_with("exit-code."))
        });
        if replica_type.is_some_and(|t| RUN_UNTIL_DELETED.contains(&t)) && !ends_given {
            script.run_seconds = None;
        }
        for (name, raw) in annotations {
            let Some(key) = name.strip_prefix(PREFIX) else {
                continue;
            };
            let raw = raw.as_str().unwrap_or_default();
            match key {
                "run-seconds" => script.run_seconds = Some(seconds(key, raw)?),
                "start-seconds" => script.start_seconds = seconds(key, raw)?,
                "exit-code" => script.exit_code = parse(key, raw)?,
                "oom" => script.oom = parse(key, raw)?,
                "evict" => script.evict = parse(key, raw)?,
                "never-start" => {
                    let reason = raw.trim();
                    script.never_start = Some(
                        if reason.is_empty() {
                            "ImagePullBackOff"
                        } else {
                            reason
                        }
                        .into(),
                    );
                }
                "fail-times" | "restarts-then-succeed" => script.fail_times = parse(key, raw)?,
                "hold" => script.hold = true,
                "sigterm-exit-code" => script.sigterm_exit_code = Some(parse(key, raw)?),
                // Kept as written, trailing newline included (the kubelet does not trim).
                "termination-message" => script.termination_message = Some(raw.to_string()),
                _ => match key.strip_prefix("exit-code.") {
                    Some(container) => {
                        script
                            .exit_codes
                            .insert(container.to_string(), parse(key, raw)?);
                    }
                    None => return Err(format!("annotation {name}: unknown script key")),
                },
            }
        }
        Ok(script)
    }

    /// The exit code of `container` on its attempt number `restart_count` (0 = first run).
    pub fn exit_code_for(&self, container: &str, restart_count: u32) -> i32 {
        if self.oom {
            return 137;
        }
        let code = self
            .exit_codes
            .get(container)
            .copied()
            .unwrap_or(self.exit_code);
        if self.fail_times == 0 {
            return code;
        }
        if restart_count < self.fail_times {
            if code == 0 { 1 } else { code }
        } else {
            0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(annotations: Value) -> Value {
        json!({"metadata": {"annotations": annotations}})
    }

    #[test]
    fn reads_every_key() {
        let s = Script::from_pod(&pod(json!({
            "sim.tfjob.dev/run-seconds": "0.5", "sim.tfjob.dev/start-seconds": "2",
            "sim.tfjob.dev/exit-code": "3", "sim.tfjob.dev/exit-code.ps": "0",
            "sim.tfjob.dev/oom": "true", "sim.tfjob.dev/evict": "false",
            "sim.tfjob.dev/never-start": "ErrImagePull", "sim.tfjob.dev/fail-times": "2",
            "sim.tfjob.dev/hold": "", "sim.tfjob.dev/sigterm-exit-code": "0",
            "sim.tfjob.dev/termination-message": "bye\n", "other/annotation": "ignored"
        })));
        let want = Script {
            run_seconds: Some(0.5),
            start_seconds: 2.0,
            exit_code: 3,
            exit_codes: [("ps".to_string(), 0)].into(),
            oom: true,
            evict: false,
            never_start: Some("ErrImagePull".into()),
            fail_times: 2,
            hold: true,
            sigterm_exit_code: Some(0),
            termination_message: Some("bye\n".into()),
        };
        assert_eq!(s, Ok(want));
        assert_eq!(Script::from_pod(&json!({})), Ok(Script::default()));
    }

    #[test]
    fn unscripted_ps_and_evaluator_pods_run_until_deleted() {
        let labelled = |t: &str, annotations: Value| json!({"metadata": {"labels": {REPLICA_TYPE_LABEL: t}, "annotations": annotations}});
        let run = |p: &Value| Script::from_pod(p).map(|s| s.run_seconds);
        let cases = [
            (labelled("ps", json!({})), None),
            (labelled("evaluator", json!({})), None),
            // Keys that do not end a run keep it open.
            (
                labelled("ps", json!({"sim.tfjob.dev/start-seconds": "2"})),
                None,
            ),
            (labelled("worker", json!({})), Some(1.0)),
            (labelled("chief", json!({})), Some(1.0)),
            // The label's value is lower case; other spellings are not the operator's.
            (labelled("PS", json!({})), Some(1.0)),
            (
                labelled("ps", json!({"sim.tfjob.dev/run-seconds": "3"})),
                Some(3.0),
            ),
            (
                labelled("ps", json!({"sim.tfjob.dev/exit-code": "1"})),
                Some(1.0),
            ),
            (
                labelled(
                    "evaluator",
                    json!({"sim.tfjob.dev/exit-code.tensorflow": "2"}),
                ),
                Some(1.0),
            ),
            (
                labelled("ps", json!({"sim.tfjob.dev/oom": "true"})),
                Some(1.0),
            ),
            (
                labelled("ps", json!({"sim.tfjob.dev/fail-times": "1"})),
                Some(1.0),
            ),
        ];
        for (pod, want) in cases {
            assert_eq!(run(&pod), Ok(want), "{pod}");
        }
    }

    #[test]
    fn rejects_bad_values() {
        for (k, v) in [
            ("run-seconds", "x"),
            ("run-seconds", "-1"),
            ("exit-code", "1.5"),
            ("oom", "yes"),
            ("sigterm-exit-code", "term"),
            ("nope", "1"),
        ] {
            let r = Script::from_pod(&pod(json!({format!("{PREFIX}{k}"): v})));
            assert!(r.is_err(), "{k}={v}");
        }
    }

    #[test]
    fn exit_codes_per_attempt() {
        let fail_twice = Script {
            fail_times: 2,
            exit_code: 0,
            ..Script::default()
        };
        let per_container = Script {
            exit_code: 2,
            exit_codes: [("ps".into(), 0)].into(),
            ..Script::default()
        };
        let cases = [
            (&fail_twice, "tensorflow", 0, 1),
            (&fail_twice, "tensorflow", 1, 1),
            (&fail_twice, "tensorflow", 2, 0),
            (&per_container, "tensorflow", 0, 2),
            (&per_container, "ps", 0, 0),
        ];
        for (script, container, attempt, want) in cases {
            assert_eq!(
                script.exit_code_for(container, attempt),
                want,
                "{container} #{attempt}"
            );
        }
        let oom = Script {
            oom: true,
            ..Script::default()
        };
        assert_eq!(oom.exit_code_for("tensorflow", 0), 137);
    }
}
