//! The API server's audit log, read as it grows: who sent which request, when it was answered.
//! The benchmark's only source of request counts and of the times children came to exist, so
//! measuring adds no request. I/O (reads the log file).

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Seek, SeekFrom};
use std::path::PathBuf;

use anyhow::Context as _;
use jiff::Timestamp;
use serde::Deserialize;

/// One request as the audit log records it (Metadata level).
#[derive(Clone, Debug)]
pub struct Request {
    /// When the API server finished it (`stageTimestamp`; a watch: when it started).
    pub at: Timestamp,
    /// When the API server received it.
    pub received: Timestamp,
    pub user: String,
    pub verb: String,
    /// `pods`, `tfjobs/status`, ... (empty for discovery and other non-resource URLs).
    pub resource: String,
    pub namespace: String,
    pub name: String,
    pub code: u16,
}

impl Request {
    pub fn is_write(&self) -> bool {
        matches!(
            self.verb.as_str(),
            "create" | "update" | "patch" | "delete" | "deletecollection"
        )
    }

    /// A create that made the object (201).
    pub fn created(&self, resource: &str, namespace: &str) -> bool {
        self.verb == "create"
            && self.code == 201
            && self.resource == resource
            && self.namespace == namespace
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Line<'a> {
    #[serde(borrow)]
    verb: &'a str,
    stage_timestamp: Timestamp,
    request_received_timestamp: Timestamp,
    #[serde(default, borrow)]
    user: User<'a>,
    #[serde(default, borrow)]
    object_ref: ObjectRef<'a>,
    #[serde(default)]
    response_status: Status,
}

#[derive(Default, Deserialize)]
struct User<'a> {
    #[serde(default, borrow)]
    username: &'a str,
}

#[derive(Default, Deserialize)]
struct ObjectRef<'a> {
    #[serde(default, borrow)]
    resource: &'a str,
    #[serde(default, borrow)]
    subresource: Option<&'a str>,
    #[serde(default, borrow)]
    namespace: &'a str,
    #[serde(default, borrow)]
    name: &'a str,
}

#[derive(Default, Deserialize)]
struct Status {
    #[serde(default)]
    code: u16,
}

fn parse(line: &str) -> Option<Request> {
    let l: Line<'_> = serde_json::from_str(line).ok()?;
    let resource = match l.object_ref.subresource {
        Some(sub) => format!("{}/{sub}", l.object_ref.resource),
        None => l.object_ref.resource.to_string(),
    };
    Some(Request {
        at: l.stage_timestamp,
        received: l.request_received_timestamp,
        user: l.user.username.to_string(),
        verb: l.verb.to_string(),
        resource,
        namespace: l.object_ref.namespace.to_string(),
        name: l.object_ref.name.to_string(),
        code: l.response_status.code,
    })
}

/// Reads the requests appended to the log since it was opened (or since `skip_to_end`).
pub struct Tail {
    path: PathBuf,
    offset: u64,
    partial: Vec<u8>,
}

impl Tail {
    /// From the log's end now: only what happens next.
    pub fn at_end(path: PathBuf) -> anyhow::Result<Self> {
        let offset = std::fs::metadata(&path)
            .with_context(|| format!("audit log {}", path.display()))?
            .len();
        Ok(Self {
            path,
            offset,
            partial: Vec::new(),
        })
    }

    /// The requests logged since the last call (an incomplete last line waits for the next).
    pub fn read(&mut self) -> anyhow::Result<Vec<Request>> {
        let mut file = std::fs::File::open(&self.path)
            .with_context(|| format!("audit log {}", self.path.display()))?;
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = std::mem::take(&mut self.partial);
        let read = file.read_to_end(&mut bytes)?;
        self.offset += read as u64;
        let complete = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
        self.partial = bytes.split_off(complete);
        Ok(String::from_utf8_lossy(&bytes)
            .lines()
            .filter_map(parse)
            .collect())
    }
}

/// Requests counted by kind: `verb resource` → count.
#[derive(Clone, Debug, Default)]
pub struct Counts(pub BTreeMap<String, u64>);

impl Counts {
    pub fn of<'a>(requests: impl IntoIterator<Item = &'a Request>) -> Self {
        let mut counts = BTreeMap::new();
        for r in requests {
            let what = if r.resource.is_empty() {
                format!("{} (discovery)", r.verb)
            } else {
                format!("{} {}", r.verb, r.resource)
            };
            *counts.entry(what).or_insert(0) += 1;
        }
        Self(counts)
    }

    pub fn total(&self) -> u64 {
        self.0.values().sum()
    }

    /// One line: `N (create pods 2000, ...)`, the biggest kinds first.
    pub fn summary(&self, per: f64) -> String {
        let mut kinds: Vec<_> = self.0.iter().collect();
        kinds.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        let parts: Vec<String> = kinds
            .iter()
            .map(|(k, n)| format!("{k} {}", fmt_per(**n as f64 / per)))
            .collect();
        format!(
            "{} ({})",
            fmt_per(self.total() as f64 / per),
            parts.join(", ")
        )
    }
}

fn fmt_per(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{x:.0}")
    } else {
        format!("{x:.2}")
    }
}

/// The names created (201) by `user` in `namespace`, per resource.
pub fn created_names<'a>(
    requests: impl IntoIterator<Item = &'a Request>,
    user: &str,
    resource: &str,
    namespace: &str,
) -> BTreeSet<String> {
    requests
        .into_iter()
        .filter(|r| r.user == user && r.created(resource, namespace))
        .map(|r| r.name.clone())
        .collect()
}
