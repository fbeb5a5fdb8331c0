//! Every PromQL expression shipped in config/monitoring: the dashboard's panel and variable
//! queries, the alert rules'. Read by `monitoring` here and, through `#[path]`, by the
//! end-to-end test that runs each against a real Prometheus (tests/e2e/monitoring.rs).

use std::path::PathBuf;

use serde_json::Value;

/// One expression and where it comes from (a panel's title, a variable's or an alert's name).
#[derive(Clone, Debug)]
pub struct Expression {
    pub origin: String,
    pub promql: String,
}

pub fn monitoring_file(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("config/monitoring")
        .join(name)
}

pub fn dashboard() -> Value {
    let text = std::fs::read_to_string(monitoring_file("dashboard.json")).expect("dashboard.json");
    serde_json::from_str(&text).expect("dashboard.json is JSON")
}

/// alerts.yaml, the PrometheusRule.
pub fn alert_rules() -> Value {
    let text = std::fs::read_to_string(monitoring_file("alerts.yaml")).expect("alerts.yaml");
    serde_saphyr::from_str(&text).expect("alerts.yaml is YAML")
}

/// The alerting rules of the PrometheusRule.
pub fn alerts(rules: &Value) -> Vec<&Value> {
    let groups = rules["spec"]["groups"].as_array().expect("spec.groups");
    groups
        .iter()
        .flat_map(|g| g["rules"].as_array().expect("a group's rules"))
        .collect()
}

/// Every panel, rows' collapsed panels included.
pub fn panels(dashboard: &Value) -> Vec<&Value> {
    let mut out = Vec::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        out.push(panel);
        out.extend(panel["panels"].as_array().into_iter().flatten());
    }
    out
}

/// A variable's query, `label_values(SELECTOR, LABEL)`: its selector.
pub fn label_values_selector(query: &str) -> Option<String> {
    let inner = query
        .trim()
        .strip_prefix("label_values(")?
        .strip_suffix(')')?;
    let (selector, _label) = inner.rsplit_once(',')?;
    Some(selector.trim().to_string())
}

pub fn expressions() -> Vec<Expression> {
    let dashboard = dashboard();
    let mut out = Vec::new();
    for panel in panels(&dashboard) {
        for target in panel["targets"].as_array().into_iter().flatten() {
            out.push(Expression {
                origin: format!("panel \"{}\"", panel["title"].as_str().unwrap_or("")),
                promql: target["expr"]
                    .as_str()
                    .expect("a target's expr")
                    .to_string(),
            });
        }
    }
    let variables = dashboard["templating"]["list"]
        .as_array()
        .expect("variables");
    for variable in variables.iter().filter(|v| v["type"] == "query") {
        let query = variable["query"]["query"]
            .as_str()
            .expect("a variable's query");
        let selector = label_values_selector(query)
            .unwrap_or_else(|| panic!("variable queries are label_values(...): {query}"));
        out.push(Expression {
            origin: format!("variable ${}", variable["name"].as_str().unwrap_or("")),
            promql: selector,
        });
    }
    let rules = alert_rules();
    for alert in alerts(&rules) {
        out.push(Expression {
            origin: format!("alert {}", alert["alert"].as_str().unwrap_or("")),
            promql: alert["expr"].as_str().expect("an alert's expr").to_string(),
        });
    }
    out
}

/// The expression as Grafana sends it: its interval variables replaced by durations, and
/// every dashboard variable by `.+` (the dashboard matches variables with `=~` only, so this
/// selects whatever the variable could).
pub fn substituted(promql: &str) -> String {
    let mut out = promql
        .replace("$__rate_interval", "1m")
        .replace("$__interval", "15s")
        .replace("$__range", "5m");
    while let Some(at) = out.find('$') {
        let rest = &out[at + 1..];
        // `${name}` or `$name`.
        let len = match rest.strip_prefix('{') {
            Some(inner) => inner.find('}').map_or(inner.len(), |i| i + 2),
            None => rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len()),
        };
        out.replace_range(at..at + 1 + len, ".+");
    }
    out
}
