//! docs/kueue.md's switch runbook, read by the switch tests so test and doc cannot drift: for
//! each direction, the Kueue Configuration step 1 shows (it becomes the test cluster's, through
//! `testcluster/kueue-mode MODE SETTINGS`) and the operator flags of the `config/` directory
//! step 2 applies. No I/O beyond reading the repository and writing the settings file.

use std::path::PathBuf;

use serde_json::Value;

const DOC: &str = include_str!("../../../docs/kueue.md");
const RUNBOOK: &str = "## Switching a live cluster";
/// What a step 1 snippet may set: the rest of the test cluster's Configuration is its own.
const SETTINGS: [&str; 2] = ["integrations", "manageJobsWithoutQueueName"];

/// One direction of the runbook.
pub struct Direction {
    /// The test cluster's Kueue mode after step 1 (`builtin` or `external`).
    pub mode: &'static str,
    /// Step 1's Configuration fields, as parsed from the doc.
    pub settings: Value,
    /// The `config/` directory step 2 applies (`kubectl apply -k <dir>`).
    pub config: String,
}

impl Direction {
    /// `### To the external framework` or `### Back to the built-in integration`.
    pub fn read(heading: &str) -> Self {
        let runbook = section(DOC, RUNBOOK, "\n## ");
        let steps = section(runbook, &format!("### {heading}"), "\n### ");
        let yaml = fenced(steps, "yaml").unwrap_or_else(|| panic!("no YAML under {heading}"));
        let settings: Value = serde_saphyr::from_str(&yaml)
            .unwrap_or_else(|e| panic!("the YAML under {heading}: {e}\n{yaml}"));
        let keys: Vec<&String> = settings.as_object().expect("a mapping").keys().collect();
        assert!(
            keys.iter().all(|k| SETTINGS.contains(&k.as_str())),
            "{heading}: the runbook's Configuration sets {keys:?}; the test takes only {SETTINGS:?}"
        );
        let integrations = &settings["integrations"];
        let listed = |list: &str, name: &str| {
            integrations[list]
                .as_array()
                .is_some_and(|l| l.iter().any(|f| f == name))
        };
        let external = listed("externalFrameworks", "TFJob.v1.kubeflow.org");
        let builtin = listed("frameworks", "kubeflow.org/tfjob");
        assert!(
            external != builtin,
            "{heading}: TFJobs must be in exactly one of frameworks and externalFrameworks"
        );
        let config = steps
            .split("kubectl apply -k ")
            .nth(1)
            .and_then(|rest| rest.split('`').next())
            .unwrap_or_else(|| panic!("no `kubectl apply -k` under {heading}"))
            .trim()
            .to_string();
        Self {
            mode: if external { "external" } else { "builtin" },
            settings,
            config,
        }
    }

    /// Step 1's fields as a file for `testcluster/kueue-mode` (YAML's JSON flow style).
    pub fn settings_file(&self) -> PathBuf {
        let path = std::env::temp_dir().join(format!(
            "tfjob-e2e-kueue-{}-{}.yaml",
            self.mode,
            std::process::id()
        ));
        let lines: Vec<String> = self
            .settings
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        std::fs::write(&path, lines.join("\n") + "\n").expect("writing the Kueue settings");
        path
    }

    /// The flags step 2's directory gives the operator on top of `config/default`: the values
    /// its patches append to the container's args.
    pub fn operator_flags(&self) -> Vec<String> {
        if self.config == "config/default" {
            return Vec::new();
        }
        let path = format!(
            "{}/{}/kustomization.yaml",
            env!("CARGO_MANIFEST_DIR"),
            self.config
        );
        let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let kustomization: Value = serde_saphyr::from_str(&text).expect("kustomization");
        let resources = kustomization["resources"].as_array().expect("resources");
        assert!(
            resources.iter().any(|r| r == "../default"),
            "{path} builds on config/default"
        );
        let patches = kustomization["patches"].as_array().into_iter().flatten();
        let ops: Vec<Value> = patches
            .filter_map(|p| p["patch"].as_str())
            .flat_map(|p| serde_saphyr::from_str::<Vec<Value>>(p).unwrap_or_default())
            .collect();
        ops.iter()
            .filter(|op| op["op"] == "add" && op["path"].as_str().is_some_and(is_args))
            .filter_map(|op| op["value"].as_str().map(String::from))
            .collect()
    }
}

fn is_args(path: &str) -> bool {
    path.ends_with("/args/-")
}

/// The text from `heading` to the next `end` (or the end of `text`).
fn section<'a>(text: &'a str, heading: &str, end: &str) -> &'a str {
    let start = text
        .find(heading)
        .unwrap_or_else(|| panic!("docs/kueue.md has no {heading:?}"));
    let rest = &text[start + heading.len()..];
    rest.find(end).map_or(rest, |i| &rest[..i])
}

/// The first fenced block of `lang` in `text`, its indentation (a list item's) taken off.
fn fenced(text: &str, lang: &str) -> Option<String> {
    let mut lines = text.lines();
    let open = lines.find(|l| l.trim() == format!("```{lang}"))?;
    let indent = open.len() - open.trim_start().len();
    let body: Vec<&str> = lines
        .take_while(|l| l.trim() != "```")
        .map(|l| l.get(indent..).unwrap_or(l.trim_start()))
        .collect();
    Some(body.join("\n"))
}

#[test]
fn the_runbook_names_a_configuration_and_a_config_directory_each_way() {
    let to = Direction::read("To the external framework");
    assert_eq!((to.mode, to.config.as_str()), ("external", "config/kueue"));
    assert_eq!(to.operator_flags(), ["--kueue"]);
    let back = Direction::read("Back to the built-in integration");
    assert_eq!(
        (back.mode, back.config.as_str()),
        ("builtin", "config/default")
    );
    assert!(back.operator_flags().is_empty());
    assert_eq!(back.settings["manageJobsWithoutQueueName"], false);
}
