//! Shared helpers of the simulator's integration tests: start a sim, a kube client, a test
//! CRD, and a raw HTTP/1.1 client for checks kube-rs hides (status lines, headers, streams).

use std::time::Duration;

use kube::api::{Api, ApiResource, DynamicObject, PostParams};
use kube::{Client, Config};
use serde_json::{Value, json};
use tfjob_sim::{Options, Sim, SimHandle};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

pub async fn start_with(opts: Options) -> (SimHandle, Client) {
    let sim = Sim::start(opts).await.expect("sim starts");
    let config = Config::new(sim.url().parse().expect("url parses"));
    let client = Client::try_from(config).expect("client builds");
    (sim, client)
}

pub async fn start() -> (SimHandle, Client) {
    start_with(Options::default()).await
}

pub const GROUP: &str = "sim.test";

/// A namespaced `Widget` CRD with a status subresource, printer columns, short names.
pub fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.sim.test"},
        "spec": {
            "group": GROUP, "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                      "shortNames": ["wd"], "categories": ["all", "simtest"]},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                    {"name": "State", "type": "string", "jsonPath": ".status.state"},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}, "note": {"type": "string"}}},
                        "status": {"type": "object", "properties": {"state": {"type": "string"}}}
                    }
                }}
            }]
        }
    })
}

pub fn widget_resource() -> ApiResource {
    ApiResource {
        group: GROUP.into(),
        version: "v1".into(),
        api_version: format!("{GROUP}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
}

/// Install the Widget CRD (through the API) and return an Api for widgets in `ns`.
pub async fn widgets(client: &Client, ns: &str) -> Api<DynamicObject> {
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
    let crds: Api<CustomResourceDefinition> = Api::all(client.clone());
    let crd: CustomResourceDefinition = serde_json::from_value(widget_crd()).expect("crd json");
    match crds.create(&PostParams::default(), &crd).await {
        Ok(_) => {}
        Err(kube::Error::Api(e)) if e.code == 409 => {}
        Err(e) => panic!("creating the CRD: {e}"),
    }
    Api::namespaced_with(client.clone(), ns, &widget_resource())
}

pub fn widget(name: &str, size: i64) -> DynamicObject {
    serde_json::from_value(json!({
        "apiVersion": format!("{GROUP}/v1"), "kind": "Widget",
        "metadata": {"name": name}, "spec": {"size": size}
    }))
    .expect("widget json")
}

/// Poll `f` until it returns Some, or panic after `secs` seconds.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut f: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = f().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The Status of a request that failed with an API error.
pub fn api_error(e: kube::Error) -> kube::core::Status {
    match e {
        kube::Error::Api(s) => *s,
        other => panic!("expected an API error, got {other}"),
    }
}

/// A raw HTTP/1.1 response.
#[derive(Debug)]
pub struct RawResponse {
    pub status: u16,
    pub headers: String,
    pub body: String,
}

impl RawResponse {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

pub fn request_bytes(
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
    close: bool,
) -> Vec<u8> {
    let conn = if close { "close" } else { "keep-alive" };
    format!(
        "{method} {path} HTTP/1.1\r\nHost: sim\r\nUser-Agent: raw-test\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {conn}\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Decode a chunked body (or return it as is).
pub fn dechunk(headers: &str, body: &[u8]) -> String {
    if !headers
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return String::from_utf8_lossy(body).into_owned();
    }
    let mut out = Vec::new();
    let mut rest = body;
    while let Some(pos) = rest.windows(2).position(|w| w == b"\r\n") {
        let size =
            usize::from_str_radix(String::from_utf8_lossy(&rest[..pos]).trim(), 16).unwrap_or(0);
        if size == 0 || rest.len() < pos + 2 + size {
            break;
        }
        out.extend_from_slice(&rest[pos + 2..pos + 2 + size]);
        rest = &rest[(pos + 4 + size).min(rest.len())..];
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// One request on a fresh connection (closed afterwards); reads until the server closes or
/// `timeout` passes (for watch streams).
pub async fn raw(
    url: &str,
    method: &str,
    path: &str,
    content_type: &str,
    body: &str,
    timeout: Duration,
) -> RawResponse {
    let addr = url.trim_start_matches("http://");
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(&request_bytes(method, path, content_type, body, true))
        .await
        .expect("write");
    let mut buf = Vec::new();
    let _ = tokio::time::timeout(timeout, s.read_to_end(&mut buf)).await;
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("header end");
    let headers = String::from_utf8_lossy(&buf[..split]).into_owned();
    let status = headers
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code");
    let body = dechunk(&headers, &buf[split + 4..]);
    RawResponse {
        status,
        headers,
        body,
    }
}

/// A GET with a JSON body type, read for at most 5 s (enough for a watch with timeoutSeconds=1).
pub async fn raw_get(url: &str, path: &str) -> RawResponse {
    raw(
        url,
        "GET",
        path,
        "application/json",
        "",
        Duration::from_secs(5),
    )
    .await
}

/// The JSON lines of a watch stream body.
pub fn watch_events(body: &str) -> Vec<Value> {
    body.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| serde_json::from_str(l).expect("event JSON"))
        .collect()
}
