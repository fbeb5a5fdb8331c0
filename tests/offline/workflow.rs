//! The release workflow (`.github/workflows/release.yaml`), which only GitHub runs: actionlint
//! (v1.7.12, `tools`) finds nothing in it, and it publishes what the README promises: on a
//! version tag, the image for amd64 and arm64 to `ghcr.io/tfjob-operator/tfjob-operator` and
//! the chart to `oci://ghcr.io/tfjob-operator/charts`, tagged with the tag's version.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

use crate::tools::tool;

const WORKFLOW: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/.github/workflows/release.yaml"
);

/// actionlint's findings on the workflow file PATH (empty: none).
fn actionlint(path: &Path) -> String {
    let out = Command::new(tool("actionlint"))
        .args(["-no-color", "-oneline"])
        .arg(path)
        .output()
        .expect("run actionlint");
    let findings = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(
        out.status.success(),
        findings.is_empty(),
        "actionlint's exit status and findings disagree:\n{findings}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    findings
}

#[test]
fn actionlint_finds_nothing_in_the_release_workflow_and_catches_a_broken_one() {
    let findings = actionlint(Path::new(WORKFLOW));
    assert!(findings.is_empty(), "{findings}");
    // The check can fail: a misspelled input of docker/build-push-action and an undefined
    // step output are found.
    let text = std::fs::read_to_string(WORKFLOW).unwrap();
    let broken = text
        .replacen(
            "platforms: ${{ matrix.platform }}",
            "platform: ${{ matrix.platform }}",
            1,
        )
        .replacen(
            "steps.build.outputs.digest",
            "steps.built.outputs.digest",
            1,
        );
    assert_ne!(broken, text);
    let dir = std::env::temp_dir().join(format!("tfjob-workflow-{}", std::process::id()));
    std::fs::create_dir_all(dir.join(".github/workflows")).unwrap();
    let copy = dir.join(".github/workflows/release.yaml");
    std::fs::write(&copy, broken).unwrap();
    let findings = actionlint(&copy);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        findings.contains("platform") && findings.contains("built"),
        "actionlint missed the broken input or output:\n{findings}"
    );
}

#[test]
fn the_workflow_publishes_on_a_version_tag_what_the_readme_names() {
    let text = std::fs::read_to_string(WORKFLOW).unwrap();
    let w: Value = serde_saphyr::from_str(&text).expect("the workflow is YAML");
    assert_eq!(w["on"]["push"]["tags"][0], "v[0-9]+.[0-9]+.[0-9]+*");
    let image = w["env"]["IMAGE"].as_str().unwrap();
    let charts = w["env"]["CHARTS"].as_str().unwrap();
    assert_eq!(image, "ghcr.io/tfjob-operator/tfjob-operator");
    assert_eq!(charts, "oci://ghcr.io/tfjob-operator/charts");
    let readme = include_str!("../../README.md");
    for name in [image.to_string(), format!("{charts}/tfjob-operator")] {
        assert!(readme.contains(&name), "README.md does not name {name}");
    }
    let platforms: Vec<&str> = w["jobs"]["image"]["strategy"]["matrix"]["include"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["platform"].as_str().unwrap())
        .collect();
    assert_eq!(platforms, ["linux/amd64", "linux/arm64"]);
    // The chart after the image, versioned as the image is tagged.
    let chart = &w["jobs"]["chart"];
    assert!(
        chart["needs"]
            .as_array()
            .unwrap()
            .contains(&"manifest".into())
    );
    let script = chart["steps"].to_string();
    for part in [
        "helm package charts/tfjob-operator --version \\\"$VERSION\\\" --app-version \\\"$VERSION\\\"",
        "helm push",
    ] {
        assert!(
            script.contains(part),
            "the chart job does not run {part}: {script}"
        );
    }
    let manifest = w["jobs"]["manifest"]["steps"].to_string();
    assert!(
        manifest.contains("--tag \\\"$IMAGE:$VERSION\\\""),
        "{manifest}"
    );
}
