//! What config/monitoring ships: a Grafana dashboard whose panels all read the data source
//! variable, alerts as a PrometheusRule with a severity, a summary and a description, both
//! reading only metrics docs/metrics.md lists, installed by `kubectl apply -k
//! config/monitoring`; and the alerts' unit tests (config/monitoring/tests) passing
//! `promtool test rules` when `TFJOB_PROMTOOL` names a promtool (testcluster/monitoring-e2e
//! builds one; without it that test says it is skipped).

use std::collections::BTreeSet;
use std::process::Command;

use serde_json::Value;

use crate::expressions::{
    alert_rules, alerts, dashboard, expressions, monitoring_file, panels, substituted,
};

#[test]
fn every_dashboard_panel_queries_the_data_source_variable_on_its_own_grid_place() {
    let dashboard = dashboard();
    assert_eq!(dashboard["uid"], "tfjob-operator");
    let mut ids = BTreeSet::new();
    let mut cells = BTreeSet::new();
    for panel in panels(&dashboard) {
        let title = panel["title"].as_str().unwrap_or("");
        assert!(
            ids.insert(panel["id"].as_u64().expect("a panel id")),
            "{title}: id twice"
        );
        let grid = &panel["gridPos"];
        let (x, y, w, h) = ["x", "y", "w", "h"]
            .map(|k| grid[k].as_u64().expect("gridPos"))
            .into();
        assert!(x + w <= 24, "{title}: wider than the dashboard");
        for cell in (x..x + w).flat_map(|cx| (y..y + h).map(move |cy| (cx, cy))) {
            assert!(
                cells.insert(cell),
                "{title} overlaps another panel at {cell:?}"
            );
        }
        if panel["type"] == "row" {
            continue;
        }
        assert!(
            !panel["description"].as_str().unwrap_or("").is_empty(),
            "{title}: no description"
        );
        let targets = panel["targets"].as_array().expect("targets");
        assert!(!targets.is_empty(), "{title}: no query");
        for source in targets
            .iter()
            .map(|t| &t["datasource"])
            .chain([&panel["datasource"]])
        {
            assert_eq!(source["uid"], "${datasource}", "{title}");
        }
    }
}

#[test]
fn every_alert_has_a_severity_a_summary_a_description_and_waits_before_firing() {
    let rules = alert_rules();
    assert_eq!(rules["kind"], "PrometheusRule");
    assert_eq!(rules["apiVersion"], "monitoring.coreos.com/v1");
    let names: Vec<&str> = alerts(&rules)
        .iter()
        .filter_map(|a| a["alert"].as_str())
        .collect();
    for wanted in [
        "TFJobOperatorDown",
        "TFJobOperatorNoLeader",
        "TFJobOperatorReconcileErrors",
        "TFJobOperatorWorkQueueGrowing",
        "TFJobStuck",
        "TFJobRestartingTooLong",
    ] {
        assert!(names.contains(&wanted), "{wanted} missing from {names:?}");
    }
    for alert in alerts(&rules) {
        let name = alert["alert"].as_str().unwrap_or("");
        assert!(
            ["critical", "warning"].contains(&alert["labels"]["severity"].as_str().unwrap_or("")),
            "{name}"
        );
        for key in ["summary", "description"] {
            assert!(
                alert["annotations"][key]
                    .as_str()
                    .is_some_and(|t| !t.is_empty()),
                "{name}: {key}"
            );
        }
        assert!(
            alert["for"].as_str().is_some_and(|f| f.ends_with('m')),
            "{name}: `for` in minutes"
        );
    }
}

/// Metric names an expression reads: identifiers outside label matchers, ranges, strings and
/// grouping label lists that are neither functions, aggregations nor keywords.
fn metric_names(promql: &str) -> BTreeSet<String> {
    // Aggregations may take their `by (...)` before their parenthesis.
    const KEYWORDS: &[&str] = &[
        "and",
        "or",
        "unless",
        "bool",
        "offset",
        "inf",
        "nan",
        "sum",
        "min",
        "max",
        "avg",
        "group",
        "stddev",
        "stdvar",
        "count",
        "count_values",
        "bottomk",
        "topk",
        "quantile",
        "limitk",
        "limit_ratio",
    ];
    const GROUPING: &[&str] = &[
        "by",
        "without",
        "on",
        "ignoring",
        "group_left",
        "group_right",
    ];
    let mut plain = String::new();
    let (mut depth, mut in_string) = (0, false);
    for c in promql.chars() {
        match c {
            '"' => in_string = !in_string,
            '{' | '[' if !in_string => depth += 1,
            '}' | ']' if !in_string => depth -= 1,
            c if !in_string && depth == 0 => plain.push(c),
            _ => {}
        }
    }
    let identifier = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == ':';
    let mut names = BTreeSet::new();
    let mut rest = plain.as_str();
    while let Some(start) = rest.find(|c: char| c.is_ascii_alphabetic() || c == '_') {
        let number = rest[..start].ends_with(|c: char| c.is_ascii_digit() || c == '.');
        let tail = &rest[start..];
        let (word, after) = tail.split_at(tail.find(|c| !identifier(c)).unwrap_or(tail.len()));
        let next = after.trim_start();
        rest = after;
        if GROUPING.contains(&word) {
            if next.starts_with('(') {
                rest = &next[next.find(')').map_or(next.len(), |i| i + 1)..];
            }
            continue;
        }
        let keyword = KEYWORDS.contains(&word.to_ascii_lowercase().as_str());
        if !keyword && !number && !next.starts_with('(') {
            names.insert(word.to_string());
        }
    }
    names
}

#[test]
fn the_metric_name_reader_skips_labels_functions_and_keywords() {
    let read = metric_names(
        r#"sum by (job, le) (rate(a_total{x="y{z}"}[5m])) / on (job) group_left b > 0.1 and absent(up{job="j"} == 1)"#,
    );
    assert_eq!(read, ["a_total", "b", "up"].map(String::from).into());
}

#[test]
fn the_dashboard_and_alerts_read_only_documented_metrics() {
    let doc =
        std::fs::read_to_string(monitoring_file("../../docs/metrics.md")).expect("docs/metrics.md");
    let mut documented: BTreeSet<String> = doc
        .lines()
        .filter_map(|l| l.strip_prefix("| `"))
        .filter_map(|l| l.split('`').next())
        .map(String::from)
        .collect();
    // A histogram's series, and Prometheus's own `up`.
    let histograms: Vec<String> = documented
        .iter()
        .filter(|n| n.ends_with("_seconds"))
        .cloned()
        .collect();
    for h in histograms {
        documented.extend(["_bucket", "_sum", "_count"].map(|s| format!("{h}{s}")));
    }
    documented.insert("up".into());
    let mut undocumented = Vec::new();
    for e in expressions() {
        for name in metric_names(&substituted(&e.promql)) {
            if !documented.contains(&name) {
                undocumented.push(format!("{}: {name}", e.origin));
            }
        }
    }
    assert!(
        undocumented.is_empty(),
        "not in docs/metrics.md: {undocumented:#?}"
    );
}

#[test]
fn kustomize_installs_the_rule_and_the_dashboard_as_shipped() {
    let out = Command::new("kubectl")
        .args(["kustomize", "config/monitoring"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("kubectl must be installed to test the kustomize config (see .ci/run)");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(&String::from_utf8_lossy(&out.stdout)).expect("YAML");
    let rule = docs
        .iter()
        .find(|d| d["kind"] == "PrometheusRule")
        .expect("the PrometheusRule");
    assert_eq!(rule["metadata"]["namespace"], "kubeflow");
    let map = docs
        .iter()
        .find(|d| d["kind"] == "ConfigMap")
        .expect("the dashboard's ConfigMap");
    assert_eq!(map["metadata"]["labels"]["grafana_dashboard"], "1");
    let shipped =
        std::fs::read_to_string(monitoring_file("dashboard.json")).expect("dashboard.json");
    assert_eq!(
        map["data"]["tfjob-operator.json"].as_str(),
        Some(shipped.as_str())
    );
}

/// `promtool check rules` and `promtool test rules` on the PrometheusRule's groups, written
/// as the plain rule file config/monitoring/tests/alerts-test.yaml names.
#[test]
fn the_alerts_pass_their_promtool_unit_tests() {
    let Some(promtool) = std::env::var_os("TFJOB_PROMTOOL") else {
        eprintln!(
            "skipped: TFJOB_PROMTOOL names no promtool (testcluster/monitoring-e2e builds one)"
        );
        return;
    };
    let dir = std::env::temp_dir().join(format!("tfjob-promtool-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let groups = serde_json::json!({"groups": alert_rules()["spec"]["groups"]});
    std::fs::write(
        dir.join("alerts.rules.yaml"),
        serde_json::to_string_pretty(&groups).expect("JSON"),
    )
    .expect("writing the rules");
    let tests = dir.join("alerts-test.yaml");
    std::fs::copy(monitoring_file("tests/alerts-test.yaml"), &tests).expect("copying the tests");
    for args in [
        ["check", "rules", "alerts.rules.yaml"],
        ["test", "rules", "alerts-test.yaml"],
    ] {
        let out = Command::new(&promtool)
            .args(args)
            .current_dir(&dir)
            .output()
            .expect("running promtool");
        assert!(
            out.status.success(),
            "promtool {}:\n{}{}",
            args.join(" "),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn variables_and_label_values_are_read_as_prometheus_would_run_them() {
    assert_eq!(
        substituted(r#"rate(x{job=~"$job", a=~"${ns}"}[$__rate_interval])"#),
        r#"rate(x{job=~".+", a=~".+"}[1m])"#
    );
    assert_eq!(
        crate::expressions::label_values_selector(r#"label_values(up{job=~"$job"}, instance)"#)
            .as_deref(),
        Some(r#"up{job=~"$job"}"#)
    );
}
