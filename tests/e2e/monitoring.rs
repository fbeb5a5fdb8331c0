//! A real Prometheus (`TFJOB_PROMETHEUS`, built by testcluster/monitoring-e2e; without it this
//! says it is skipped) scrapes the shipped binary every second while the jobs of
//! `metrics::Scenario` run, with the alert rules loaded. Then every expression of
//! config/monitoring (the dashboard's queries and variables, the alerts) is parsed by that
//! Prometheus, run against it, and each of its series selectors must have matched a series
//! during the run: a renamed metric or label fails here.

use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

#[path = "../offline/expressions.rs"]
#[allow(dead_code)]
mod expressions;

use crate::metrics::{Scenario, now};
use crate::support::scrape::{MetricsBinary, encode, free_port, get};
use crate::support::{TestCluster, WAIT};

/// The scrape job's name: the metrics Service's, as the ServiceMonitor of config/prometheus
/// names it and the alerts select it.
const JOB: &str = "tfjob-operator-metrics";

struct Prometheus {
    child: Child,
    port: u16,
}

impl Prometheus {
    fn start(binary: &std::ffi::OsStr, dir: &std::path::Path, target: u16) -> Self {
        let groups = json!({"groups": expressions::alert_rules()["spec"]["groups"]});
        std::fs::write(dir.join("alerts.rules.yaml"), groups.to_string()).expect("the rules");
        let config = json!({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": ["alerts.rules.yaml"],
            "scrape_configs": [{"job_name": JOB, "static_configs": [{"targets": [format!("127.0.0.1:{target}")]}]}]
        });
        std::fs::write(dir.join("prometheus.yml"), config.to_string()).expect("the config");
        let port = free_port();
        let log = std::fs::File::create(dir.join("prometheus.log")).expect("the log");
        let child = Command::new(binary)
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address=127.0.0.1:{port}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("the log"))
            .stderr(log)
            .spawn()
            .expect("starting prometheus");
        Self { child, port }
    }

    /// GET an API path; its `data`, or the error Prometheus gave.
    async fn api(&self, path: &str) -> Result<Value, String> {
        let port = self.port;
        let path = path.to_string();
        let answer = tokio::task::spawn_blocking(move || get(port, &path))
            .await
            .expect("the request");
        let (_, body) = answer.ok_or("Prometheus does not answer")?;
        let body: Value = serde_json::from_str(&body).map_err(|e| format!("{e}: {body}"))?;
        match body["status"].as_str() {
            Some("success") => Ok(body["data"].clone()),
            _ => Err(format!("{}: {}", body["errorType"], body["error"])),
        }
    }

    async fn until(&self, what: &str, check: impl Fn(&Value) -> bool, path: &str) {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let answer = self.api(path).await;
            if answer.as_ref().is_ok_and(&check) {
                return;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}: {answer:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }
}

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every series selector of a parsed expression (Prometheus's `parse_query` tree), as a
/// selector string: `{__name__="x",job=~".+"}`.
fn selectors(node: &Value, out: &mut Vec<String>) {
    match node {
        Value::Object(map) => {
            if let (Some("vectorSelector" | "matrixSelector"), Some(matchers)) = (
                map.get("type").and_then(Value::as_str),
                map.get("matchers").and_then(Value::as_array),
            ) {
                let parts: Vec<String> = matchers
                    .iter()
                    .map(|m| {
                        format!(
                            "{}{}{}",
                            m["name"].as_str().unwrap_or(""),
                            m["type"].as_str().unwrap_or(""),
                            m["value"]
                        )
                    })
                    .collect();
                out.push(format!("{{{}}}", parts.join(",")));
                return;
            }
            map.values().for_each(|v| selectors(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| selectors(v, out)),
        _ => {}
    }
}

#[tokio::test]
async fn prometheus_finds_a_series_for_every_selector_of_the_dashboard_and_the_alerts() {
    let Some(binary) = std::env::var_os("TFJOB_PROMETHEUS") else {
        eprintln!(
            "skipped: TFJOB_PROMETHEUS names no prometheus (testcluster/monitoring-e2e builds one)"
        );
        return;
    };
    let c = TestCluster::without_operator("monitoring").await;
    let scenario = Scenario::prepare(&c).await;
    let flags = scenario.flags(&c, "2");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let operator = MetricsBinary::start(&c, "monitoring", &flags);
    let dir = std::env::temp_dir().join(format!("tfjob-prometheus-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    let prometheus = Prometheus::start(&binary, &dir, operator.metrics_port);
    let up = format!(
        "/api/v1/query?query={}",
        encode(&format!("up{{job=\"{JOB}\"}} == 1"))
    );
    prometheus
        .until(
            "the operator scraped",
            |d| d["result"].as_array().is_some_and(|r| !r.is_empty()),
            &up,
        )
        .await;

    scenario.run(&c).await;
    // One more scrape after the last job got where it was going, and one rule evaluation.
    let done = now();
    let last = format!(
        "/api/v1/query?query={}",
        encode(&format!("timestamp(up{{job=\"{JOB}\"}})"))
    );
    prometheus
        .until(
            "a scrape after the jobs",
            |d| {
                d["result"][0]["value"][1]
                    .as_str()
                    .and_then(|v| v.parse::<f64>().ok())
                    .is_some_and(|t| t > done + 1.0)
            },
            &last,
        )
        .await;

    let mut failures = Vec::new();
    let range = format!("&start={}&end={}", scenario.started - 5.0, now());
    let all = expressions::expressions();
    for e in &all {
        let promql = expressions::substituted(&e.promql);
        let tree = match prometheus
            .api(&format!("/api/v1/parse_query?query={}", encode(&promql)))
            .await
        {
            Ok(tree) => tree,
            Err(error) => {
                failures.push(format!("{}: does not parse: {error}\n  {promql}", e.origin));
                continue;
            }
        };
        if let Err(error) = prometheus
            .api(&format!("/api/v1/query?query={}", encode(&promql)))
            .await
        {
            failures.push(format!("{}: fails: {error}\n  {promql}", e.origin));
        }
        let mut found = Vec::new();
        selectors(&tree, &mut found);
        assert!(!found.is_empty(), "{}: no selector in {promql}", e.origin);
        for selector in found {
            let series = prometheus
                .api(&format!(
                    "/api/v1/series?match[]={}{range}",
                    encode(&selector)
                ))
                .await;
            if !series
                .as_ref()
                .is_ok_and(|s| s.as_array().is_some_and(|s| !s.is_empty()))
            {
                failures.push(format!(
                    "{}: no series for {selector} ({series:?})\n  in {promql}",
                    e.origin
                ));
            }
        }
    }
    // The rules loaded and evaluated without error.
    let rules = prometheus.api("/api/v1/rules").await.expect("the rules");
    let evaluated: Vec<&Value> = rules["groups"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|g| g["rules"].as_array().into_iter().flatten())
        .collect();
    assert_eq!(
        evaluated.len(),
        expressions::alerts(&expressions::alert_rules()).len(),
        "{rules}"
    );
    for rule in evaluated {
        if rule["health"] != "ok" {
            failures.push(format!(
                "alert {}: {} {}",
                rule["name"], rule["health"], rule["lastError"]
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} expressions read what does not exist:\n{}",
        failures.len(),
        all.len(),
        failures.join("\n")
    );
    println!("{} expressions checked against Prometheus", all.len());
    scenario.clean_up(&c).await;
    drop(prometheus);
    let _ = std::fs::remove_dir_all(&dir);
}
