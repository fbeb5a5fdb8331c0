//! The operator's HTTP endpoints: `/metrics` on the metrics address, `/healthz` and `/readyz`
//! on the health address (both may be the same). I/O.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::metrics::Metrics;

/// Pause after a failed accept, doubling up to the maximum while failures persist.
const ACCEPT_PAUSE_MIN: Duration = Duration::from_millis(10);
const ACCEPT_PAUSE_MAX: Duration = Duration::from_secs(1);

/// What the endpoints report.
#[derive(Clone, Default)]
pub struct Probes {
    pub metrics: Metrics,
    /// Set once the caches have synced (or while standing by for leadership).
    pub ready: Arc<AtomicBool>,
}

/// Which paths a listener answers.
#[derive(Clone, Copy, Debug)]
pub struct Endpoints {
    pub metrics: bool,
    pub health: bool,
}

/// Bind `addr` and serve until the task is dropped. Returns the bound address.
pub async fn serve(
    addr: SocketAddr,
    probes: Probes,
    endpoints: Endpoints,
) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        let mut pause = ACCEPT_PAUSE_MIN;
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => {
                    pause = ACCEPT_PAUSE_MIN;
                    stream
                }
                // Out of file descriptors (EMFILE) and the like persist until connections
                // close: retrying at once would spin a core. Wait, longer each time.
                Err(e) => {
                    tracing::warn!(error = %e, "accepting a connection");
                    tokio::time::sleep(pause).await;
                    pause = (pause * 2).min(ACCEPT_PAUSE_MAX);
                    continue;
                }
            };
            let probes = probes.clone();
            tokio::spawn(async move {
                let service = service_fn(move |req| {
                    let probes = probes.clone();
                    async move { Ok::<_, Infallible>(answer(&req, &probes, endpoints)) }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}

fn answer(req: &Request<Incoming>, probes: &Probes, endpoints: Endpoints) -> Response<Full<Bytes>> {
    match req.uri().path() {
        "/metrics" if endpoints.metrics => text(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            probes.metrics.render(),
        ),
        "/healthz" if endpoints.health => text(StatusCode::OK, "text/plain", "ok".into()),
        "/readyz" if endpoints.health => {
            if probes.ready.load(Ordering::Relaxed) {
                text(StatusCode::OK, "text/plain", "ok".into())
            } else {
                text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "text/plain",
                    "caches not synced".into(),
                )
            }
        }
        _ => text(StatusCode::NOT_FOUND, "text/plain", "not found".into()),
    }
}

fn text(code: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(Bytes::from(body)));
    *resp.status_mut() = code;
    if let Ok(v) = http::HeaderValue::from_str(content_type) {
        resp.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    resp
}
