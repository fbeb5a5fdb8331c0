//! The operator's image on the node is the Dockerfile's runtime stage, and `config/` runs it.

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::{Value, json};

use crate::cluster::{Node, Share};

const DOCKERFILE: &str = include_str!("../../Dockerfile");
const KUSTOMIZATION: &str = include_str!("../../config/manager/kustomization.yaml");
const MANAGER: &str = include_str!("../../config/manager/manager.yaml");

/// The directives of the Dockerfile's last stage (the runtime), continuation lines joined.
fn runtime_stage() -> Vec<(String, String)> {
    let text = DOCKERFILE.replace("\\\n", " ");
    let mut stage = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (word, rest) = line.split_once(' ').unwrap_or((line, ""));
        if word.eq_ignore_ascii_case("FROM") {
            stage.clear();
        }
        stage.push((word.to_uppercase(), rest.trim().to_string()));
    }
    stage
}

fn directive(stage: &[(String, String)], word: &str) -> String {
    stage
        .iter()
        .find(|(w, _)| w == word)
        .map(|(_, r)| r.clone())
        .unwrap_or_else(|| panic!("the Dockerfile's runtime stage has no {word}"))
}

/// A field of config/manager's `images:` entry.
fn images_field(key: &str) -> String {
    KUSTOMIZATION
        .lines()
        .find_map(|l| l.trim().trim_start_matches("- ").strip_prefix(key))
        .map(|v| v.trim().trim_matches('"').to_string())
        .unwrap_or_else(|| panic!("config/manager/kustomization.yaml has no {key}"))
}

/// `newName:newTag` of config/manager's `images:` entry.
fn configured_image() -> String {
    format!("{}:{}", images_field("newName:"), images_field("newTag:"))
}

/// The image name the entry replaces (the one manager.yaml writes).
fn image_name() -> String {
    images_field("name:")
}

/// The reference as the CRI normalises it (docker.io/library/ for a short name), as
/// testcluster/images/build imports it.
fn normalised(reference: &str) -> String {
    let first = reference.split('/').next().unwrap_or_default();
    if !reference.contains('/') {
        format!("docker.io/library/{reference}")
    } else if first.contains('.') || first.contains(':') || first == "localhost" {
        reference.to_string()
    } else {
        format!("docker.io/{reference}")
    }
}

fn ctr(node: &Node, args: &[&str]) -> Vec<u8> {
    let out = Command::new("ctr")
        .args([
            "--address",
            node.containerd_sock.to_str().unwrap(),
            "--namespace",
            "k8s.io",
        ])
        .args(args)
        .output()
        .expect("run ctr");
    assert!(
        out.status.success(),
        "ctr {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The image's config (`config` of the OCI/docker image configuration) as containerd has it.
fn image_config(node: &Node, reference: &str) -> Value {
    let list =
        String::from_utf8(ctr(node, &["images", "ls", &format!("name=={reference}")])).unwrap();
    let digest = list
        .lines()
        .nth(1)
        .and_then(|l| l.split_whitespace().nth(2))
        .unwrap_or_else(|| panic!("{reference} is not in the node's containerd:\n{list}"))
        .to_string();
    let manifest: Value = serde_json::from_slice(&ctr(node, &["content", "get", &digest])).unwrap();
    let config = manifest["config"]["digest"].as_str().unwrap();
    serde_json::from_slice(&ctr(node, &["content", "get", config])).unwrap()
}

#[test]
fn the_operator_image_is_the_dockerfiles_runtime_stage() {
    let Some(node) = Node::sharing(
        "the_operator_image_is_the_dockerfiles_runtime_stage",
        Share::NoJobs,
    ) else {
        return;
    };
    let stage = runtime_stage();
    // The base is a build argument whose default is the published distroless image; the node
    // built this image with a base made on the machine (testcluster/images/build).
    assert_eq!(directive(&stage, "FROM"), "${RUNTIME_BASE}");
    assert!(
        DOCKERFILE.contains("ARG RUNTIME_BASE=gcr.io/distroless/cc-debian12:nonroot"),
        "the Dockerfile's default runtime base changed"
    );
    let reference = normalised(&configured_image());
    let image = image_config(&node, &reference);
    let config = &image["config"];
    assert_eq!(config["User"], directive(&stage, "USER"));
    let entrypoint: Value = serde_json::from_str(&directive(&stage, "ENTRYPOINT")).unwrap();
    let cmd: Value = serde_json::from_str(&directive(&stage, "CMD")).unwrap();
    assert_eq!(config["Entrypoint"], entrypoint);
    assert_eq!(config["Cmd"], cmd);
    let exposed: BTreeSet<String> = directive(&stage, "EXPOSE")
        .split_whitespace()
        .map(|p| format!("{p}/tcp"))
        .collect();
    let in_image: BTreeSet<String> = config["ExposedPorts"]
        .as_object()
        .expect("ExposedPorts")
        .keys()
        .cloned()
        .collect();
    assert_eq!(in_image, exposed);
    // The stage's COPY put the binary where the entrypoint runs it (buildah's history line).
    let copy = directive(&stage, "COPY");
    let target = copy.split_whitespace().last().unwrap();
    assert_eq!(entrypoint, json!([target]));
    let history = image["history"].to_string();
    assert!(
        history.contains(&format!("in {target}")),
        "no COPY into {target}: {history}"
    );

    // config/manager runs this image (its `images:` entry renames the manifest's), never
    // pulling it, on the ports the image exposes.
    assert!(
        MANAGER.contains(&format!("image: {}:", image_name())),
        "manager.yaml names another image than the `images:` entry of its kustomization"
    );
    assert!(MANAGER.contains("imagePullPolicy: IfNotPresent"));
    for port in directive(&stage, "EXPOSE").split_whitespace() {
        assert!(
            MANAGER.contains(&format!("containerPort: {port}")),
            "manager.yaml lacks port {port}"
        );
    }
}
