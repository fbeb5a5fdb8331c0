//! The shipped binary with `/metrics` on a free loopback port, and what a scrape of it says:
//! samples by name and labels, read from the text exposition. Also plain HTTP GETs on loopback
//! (HTTP/1.0, so answers come whole, never chunked).

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use super::{TestCluster, WAIT};

/// A port nothing listens on now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port()
}

/// GET `path_and_query` on 127.0.0.1:`port`: (status code, body), or None while nothing
/// answers.
pub fn get(port: u16, path_and_query: &str) -> Option<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(WAIT)).ok()?;
    write!(
        stream,
        "GET {path_and_query} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n"
    )
    .ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let code = response.split_whitespace().nth(1)?.parse().ok()?;
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_string());
    Some((code, body.unwrap_or_default()))
}

/// Percent-encodes a query parameter's value.
pub fn encode(value: &str) -> String {
    value
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// One sample: its labels and value.
pub type Labels = BTreeMap<String, String>;

/// The samples of one scrape.
#[derive(Debug)]
pub struct Scrape {
    pub samples: Vec<(String, Labels, f64)>,
    pub text: String,
}

impl Scrape {
    /// Reads the text exposition (comments skipped; label values without escapes but `\"`).
    pub fn parse(text: &str) -> Self {
        let mut samples = Vec::new();
        for line in text
            .lines()
            .filter(|l| !l.starts_with('#') && !l.is_empty())
        {
            let (series, value) = line.rsplit_once(' ').expect("a sample line");
            let value: f64 = value.parse().expect("a sample value");
            let (name, labels) = match series.split_once('{') {
                Some((name, rest)) => (name, parse_labels(rest.trim_end_matches('}'))),
                None => (series, Labels::new()),
            };
            samples.push((name.to_string(), labels, value));
        }
        Self {
            samples,
            text: text.to_string(),
        }
    }

    /// The sum of the samples of `name` carrying every label of `having`; None when none does.
    pub fn value(&self, name: &str, having: &[(&str, &str)]) -> Option<f64> {
        let mut matched = self
            .samples
            .iter()
            .filter(|(n, labels, _)| {
                n == name
                    && having
                        .iter()
                        .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
            })
            .peekable();
        matched.peek()?;
        Some(matched.map(|(_, _, v)| v).sum())
    }

    /// `value`, or a failure naming the series and showing the scrape.
    pub fn must(&self, name: &str, having: &[(&str, &str)]) -> f64 {
        self.value(name, having)
            .unwrap_or_else(|| panic!("no {name} with {having:?} in:\n{}", self.text))
    }
}

fn parse_labels(text: &str) -> Labels {
    let mut labels = Labels::new();
    let mut rest = text;
    while let Some((key, after)) = rest.split_once("=\"") {
        let mut value = String::new();
        let mut chars = after.char_indices();
        let mut end = after.len();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => value.extend(chars.next().map(|(_, c)| c)),
                '"' => {
                    end = i + 1;
                    break;
                }
                c => value.push(c),
            }
        }
        labels.insert(key.trim_start_matches(',').to_string(), value);
        rest = &after[end..];
    }
    labels
}

/// `tfjob-operator run` as shipped, with its metrics and probes on free loopback ports, and
/// the credentials of its tier (the simulator's; the operator's ServiceAccount on the real one).
pub struct MetricsBinary {
    child: Child,
    pub metrics_port: u16,
    pub log: PathBuf,
}

impl MetricsBinary {
    pub fn start(c: &TestCluster, name: &str, flags: &[&str]) -> Self {
        let dir = std::env::temp_dir().join(format!("tfjob-{name}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let kubeconfig = match &c.real {
            Some(real) => real.operator_kubeconfig.clone(),
            None => {
                let path = dir.join("kubeconfig");
                c.sim().write_kubeconfig(&path).expect("the kubeconfig");
                path
            }
        };
        let log = dir.join("operator.log");
        let out = std::fs::File::create(&log).expect("the operator's log");
        let (metrics_port, health) = (free_port(), free_port());
        let child = Command::new(env!("CARGO_BIN_EXE_tfjob-operator"))
            .arg("run")
            .args(flags)
            .args([
                "--metrics-bind-address",
                &format!("127.0.0.1:{metrics_port}"),
            ])
            .args([
                "--health-probe-bind-address",
                &format!("127.0.0.1:{health}"),
            ])
            .env("KUBECONFIG", &kubeconfig)
            .env("HOME", &dir)
            .stdin(Stdio::null())
            .stdout(out.try_clone().expect("the log"))
            .stderr(out)
            .spawn()
            .expect("starting tfjob-operator");
        Self {
            child,
            metrics_port,
            log,
        }
    }

    /// One scrape of `/metrics`, waiting for the endpoint to answer.
    pub async fn scrape(&self) -> Scrape {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let port = self.metrics_port;
            let answer = tokio::task::spawn_blocking(move || get(port, "/metrics"))
                .await
                .expect("the scrape");
            if let Some((200, body)) = answer {
                return Scrape::parse(&body);
            }
            let log = std::fs::read_to_string(&self.log).unwrap_or_default();
            assert!(
                tokio::time::Instant::now() < deadline,
                "/metrics does not answer; log:\n{log}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Scrapes until `check` holds of a scrape, which is returned.
    pub async fn until(&self, what: &str, check: impl Fn(&Scrape) -> bool) -> Scrape {
        let deadline = tokio::time::Instant::now() + WAIT;
        loop {
            let scrape = self.scrape().await;
            if check(&scrape) {
                return scrape;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "timed out waiting for {what}; last scrape:\n{}",
                scrape.text
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}

impl Drop for MetricsBinary {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn the_text_exposition_is_read_by_name_and_labels() {
    let scrape = Scrape::parse(
        "# TYPE a counter\na_total{x=\"1\",y=\"q\\\"uote\"} 2\na_total{x=\"2\"} 3\nb 1.5\n# EOF\n",
    );
    assert_eq!(scrape.value("a_total", &[]), Some(5.0));
    assert_eq!(scrape.value("a_total", &[("y", "q\"uote")]), Some(2.0));
    assert_eq!(scrape.value("b", &[]), Some(1.5));
    assert_eq!(scrape.value("c", &[]), None);
    assert_eq!(encode("up{a=\"b c\"}"), "up%7Ba%3D%22b%20c%22%7D");
}
