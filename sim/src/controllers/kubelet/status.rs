//! Builders for the pieces of a pod `.status` in the shapes the real kubelet writes (pure).

use jiff::Timestamp;
use serde_json::{Value, json};

/// A stable 64-hex-digit id (containerID, image digest) derived from `parts` (FNV-1a, repeated).
pub(crate) fn hex_id(parts: &[&str]) -> String {
    let mut out = String::with_capacity(64);
    let mut seed: u64 = 0xcbf2_9ce4_8422_2325;
    while out.len() < 64 {
        for part in parts {
            for b in part.bytes().chain([0u8]) {
                seed ^= u64::from(b);
                seed = seed.wrapping_mul(0x0100_0000_01b3);
            }
        }
        out.push_str(&format!("{seed:016x}"));
    }
    out
}

/// A containerd-style image reference with digest, like the kubelet's `imageID`.
pub(crate) fn image_id(image: &str) -> String {
    let repo = match image.rsplit_once(':') {
        Some((repo, tag)) if !tag.contains('/') => repo,
        _ => image,
    };
    let repo = if repo.contains('/') {
        repo.to_string()
    } else {
        format!("docker.io/library/{repo}")
    };
    format!("{repo}@sha256:{}", hex_id(&[image]))
}

/// The log of a simulated container: one line saying so (what `pods/log` serves, and the tail
/// the kubelet copies to `terminated.message` under `FallbackToLogsOnError`).
pub fn sim_log(ns: &str, pod: &str, container: &str) -> String {
    format!(
        "tfjob-sim: pod {ns}/{pod} container {container:?} ran in the simulator (no real logs)\n"
    )
}

/// The pod's QoS class from its containers' requests and limits.
pub(crate) fn qos_class(pod: &Value) -> &'static str {
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array);
    let containers = containers.map(Vec::as_slice).unwrap_or_default();
    let res = |c: &Value, kind: &str| {
        c.pointer(&format!("/resources/{kind}"))
            .and_then(Value::as_object)
            .cloned()
    };
    let any = containers.iter().any(|c| {
        res(c, "requests").is_some_and(|r| !r.is_empty())
            || res(c, "limits").is_some_and(|l| !l.is_empty())
    });
    if !any {
        return "BestEffort";
    }
    let guaranteed = containers.iter().all(|c| {
        let limits = res(c, "limits").unwrap_or_default();
        let requests = res(c, "requests").unwrap_or_default();
        ["cpu", "memory"].iter().all(|k| limits.contains_key(*k))
            && requests.iter().all(|(k, v)| limits.get(k) == Some(v))
    });
    if guaranteed {
        "Guaranteed"
    } else {
        "Burstable"
    }
}

/// A condition, keeping the old `lastTransitionTime` when its status did not change.
pub(crate) fn condition(
    old: &Value,
    type_: &str,
    ok: bool,
    reason: Option<&str>,
    message: Option<&str>,
    now: Timestamp,
) -> Value {
    let status = if ok { "True" } else { "False" };
    let previous = old
        .get("conditions")
        .and_then(Value::as_array)
        .and_then(|cs| cs.iter().find(|c| c["type"] == type_))
        .filter(|c| c["status"] == status)
        .and_then(|c| c.get("lastTransitionTime").cloned());
    let mut c = json!({
        "type": type_,
        "status": status,
        "lastProbeTime": null,
        "lastTransitionTime": previous.unwrap_or_else(|| json!(now.to_string())),
    });
    if let Some(r) = reason {
        c["reason"] = json!(r);
    }
    if let Some(m) = message {
        c["message"] = json!(m);
    }
    c
}

/// A container status before its container exists: waiting with `reason`.
pub(crate) fn waiting_container(container: &Value, reason: &str, message: Option<&str>) -> Value {
    let mut waiting = json!({"reason": reason});
    if let Some(m) = message {
        waiting["message"] = json!(m);
    }
    json!({
        "name": container["name"],
        "image": container["image"],
        "imageID": "",
        "ready": false,
        "started": false,
        "restartCount": 0,
        "state": {"waiting": waiting},
        "lastState": {},
    })
}

/// The waiting message the kubelet shows for a container that cannot start.
pub(crate) fn never_start_message(reason: &str, image: &str) -> String {
    match reason {
        "ImagePullBackOff" => format!("Back-off pulling image \"{image}\""),
        "ErrImagePull" => format!("failed to pull and unpack image \"{image}\": not found"),
        _ => format!("container cannot start ({reason}), simulated by sim.tfjob.dev/never-start"),
    }
}

/// An init container that already ran to completion.
pub(crate) fn completed_init_container(pod_uid: &str, container: &Value, now: Timestamp) -> Value {
    let name = container["name"].as_str().unwrap_or_default();
    let image = container["image"].as_str().unwrap_or_default();
    let id = format!("containerd://{}", hex_id(&[pod_uid, name, "init"]));
    json!({
        "name": name,
        "image": image,
        "imageID": image_id(image),
        "containerID": id,
        "ready": true,
        "started": false,
        "restartCount": 0,
        "state": {"terminated": {
            "exitCode": 0, "reason": "Completed", "startedAt": now.to_string(),
            "finishedAt": now.to_string(), "containerID": id,
        }},
        "lastState": {},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_stable_and_shaped_like_the_kubelets() {
        assert_eq!(hex_id(&["a", "b"]), hex_id(&["a", "b"]));
        assert_ne!(hex_id(&["a", "b"]), hex_id(&["ab"]));
        assert_eq!(hex_id(&["x"]).len(), 64);
        assert!(image_id("tf:2.1").starts_with("docker.io/library/tf@sha256:"));
        assert!(image_id("ghcr.io/org/tf:2").starts_with("ghcr.io/org/tf@sha256:"));
    }

    #[test]
    fn qos_classes() {
        let cases = [
            (json!({"spec": {"containers": [{}]}}), "BestEffort"),
            (
                json!({"spec": {"containers": [{"resources": {"requests": {"cpu": "1"}}}]}}),
                "Burstable",
            ),
            (
                json!({"spec": {"containers": [{"resources": {"limits": {"cpu": "1", "memory": "1Gi"}}}]}}),
                "Guaranteed",
            ),
        ];
        for (pod, want) in cases {
            assert_eq!(qos_class(&pod), want, "{pod}");
        }
    }
}
