// PLACEHOLDER: replaced by the owner's version on merge
//! Pure pod state machine (placeholder: Running, then Succeeded after run-seconds; pure).
use serde_json::{Value, json};

#[derive(Clone, Debug)]
pub struct Script {
    run_seconds: f64,
}

impl Script {
    pub fn from_pod(pod: &Value) -> Result<Self, String> {
        let ann = &pod["metadata"]["annotations"]["sim.tfjob.dev/run-seconds"];
        let run_seconds = match ann.as_str() {
            Some(s) => s.parse().map_err(|e| format!("run-seconds: {e}"))?,
            None => 1.0,
        };
        Ok(Self { run_seconds })
    }
}

pub struct Step {
    pub status: Option<Value>,
    pub next_at: Option<jiff::Timestamp>,
}

pub fn step(pod: &Value, script: &Script, _node: &str, pod_ip: &str, now: jiff::Timestamp) -> Step {
    let status = &pod["status"];
    match status["phase"].as_str() {
        Some("Succeeded") | Some("Failed") => Step {
            status: None,
            next_at: None,
        },
        Some("Running") => {
            let started: jiff::Timestamp = status["startTime"]
                .as_str()
                .and_then(|s| s.parse().ok())
                .unwrap_or(now);
            let end = started + jiff::SignedDuration::from_secs_f64(script.run_seconds);
            if now >= end {
                let mut s = status.clone();
                s["phase"] = json!("Succeeded");
                Step {
                    status: Some(s),
                    next_at: None,
                }
            } else {
                Step {
                    status: None,
                    next_at: Some(end),
                }
            }
        }
        _ => {
            let mut s = status.clone();
            s["phase"] = json!("Running");
            s["podIP"] = json!(pod_ip);
            s["startTime"] = json!(now.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
            Step {
                status: Some(s),
                next_at: Some(now),
            }
        }
    }
}
