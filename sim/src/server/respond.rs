//! Building HTTP responses: JSON, Status errors, text and streams (pure).
use std::convert::Infallible;

use bytes::Bytes;
use futures::StreamExt;
use http::{HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::UnsyncBoxBody};
use hyper::body::Frame;
use serde_json::Value;

use crate::store::ApiError;

pub type Body = UnsyncBoxBody<Bytes, Infallible>;

fn with_body(code: u16, content_type: &'static str, bytes: Bytes) -> Response<Body> {
    let mut r = Response::new(Full::new(bytes).boxed_unsync());
    *r.status_mut() = StatusCode::from_u16(code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

pub fn json(code: u16, v: &Value) -> Response<Body> {
    let bytes = serde_json::to_vec(v).unwrap_or_default();
    with_body(code, "application/json", Bytes::from(bytes))
}

pub fn text(code: u16, s: String) -> Response<Body> {
    with_body(code, "text/plain", Bytes::from(s))
}

pub fn bytes(code: u16, content_type: &'static str, b: Bytes) -> Response<Body> {
    with_body(code, content_type, b)
}

pub fn error(e: &ApiError) -> Response<Body> {
    let mut r = json(e.code, &e.to_status());
    if let Some(secs) = e.retry_after
        && let Ok(v) = HeaderValue::from_str(&secs.to_string())
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// Add one `Warning: 299 - "<text>"` header per warning (RFC 7234 warn-text, quoted and
/// escaped), as the real server does for field validation warnings; kubectl prints each.
pub fn with_warnings(mut r: Response<Body>, warnings: &[String]) -> Response<Body> {
    for w in warnings {
        let quoted = serde_json::to_string(w).unwrap_or_default();
        if let Ok(v) = HeaderValue::from_str(&format!("299 - {quoted}")) {
            r.headers_mut().append(header::WARNING, v);
        }
    }
    r
}

/// Puts `warning` before the warnings the response has already.
pub fn with_warning_first(mut r: Response<Body>, warning: &str) -> Response<Body> {
    let later: Vec<HeaderValue> = r
        .headers()
        .get_all(header::WARNING)
        .iter()
        .cloned()
        .collect();
    r.headers_mut().remove(header::WARNING);
    let mut r = with_warnings(r, &[warning.to_string()]);
    for v in later {
        r.headers_mut().append(header::WARNING, v);
    }
    r
}

/// A chunked stream of newline-terminated JSON frames (a watch).
pub fn stream(rx: futures::channel::mpsc::Receiver<Bytes>) -> Response<Body> {
    let body = StreamBody::new(rx.map(|b| Ok::<_, Infallible>(Frame::data(b))));
    let mut r = Response::new(body.boxed_unsync());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    r
}

/// The `Status` a successful deletion answers with.
pub fn success_status(group: &str, plural: &str, name: &str, uid: &str) -> Value {
    let mut details = serde_json::json!({"name": name, "kind": plural, "uid": uid});
    if !group.is_empty() {
        details["group"] = Value::String(group.into());
    }
    serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details})
}
