//! client-go's API client metrics (`rest_client_requests_total{code,method,host}`,
//! `rest_client_request_duration_seconds{verb,host}`), counted by a tower layer on kube's
//! client, so every request is counted wherever it is made. No I/O of its own.
//!
//! As client-go: a request that got no answer counts under `code="<error>"`; the duration runs
//! until the answer's body is read (or dropped), and watches, which last minutes by design,
//! are counted but not timed. Unlike client-go: kube's client retries a 429, 503 or 504 inside
//! the stack, below this layer, so a retried request counts once, with its last answer.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Instant;

use futures::future::BoxFuture;
use http::{Method, Request, Response, Uri};
use http_body::{Body, Frame, SizeHint};
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;
use tower_layer::Layer;
use tower_service::Service;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    pub code: String,
    pub method: String,
    pub host: Arc<str>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DurationLabels {
    pub verb: String,
    pub host: Arc<str>,
}

type Histograms = Family<DurationLabels, Histogram, fn() -> Histogram>;

/// client-go's buckets.
fn duration_buckets() -> Histogram {
    Histogram::new([
        0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0,
    ])
}

/// The API client's request counts and durations.
#[derive(Clone, Debug)]
pub struct RestMetrics {
    requests: Family<RequestLabels, Counter>,
    durations: Histograms,
}

impl RestMetrics {
    pub fn register(registry: &mut Registry) -> Self {
        let metrics = Self {
            requests: Family::default(),
            durations: Family::new_with_constructor(duration_buckets),
        };
        registry.register(
            "rest_client_requests",
            "Number of HTTP requests, partitioned by status code, method, and host",
            metrics.requests.clone(),
        );
        registry.register(
            "rest_client_request_duration_seconds",
            "Request latency in seconds. Broken down by verb and host",
            metrics.durations.clone(),
        );
        metrics
    }

    /// The layer counting a client's requests to the API server at `cluster_url`.
    pub fn layer(&self, cluster_url: &Uri) -> RestLayer {
        let host = cluster_url
            .authority()
            .map(|a| a.as_str())
            .unwrap_or_default();
        RestLayer {
            metrics: self.clone(),
            host: host.into(),
        }
    }

    fn count(&self, code: String, method: &Method, host: &Arc<str>) {
        let labels = RequestLabels {
            code,
            method: method.as_str().to_string(),
            host: host.clone(),
        };
        self.requests.get_or_create(&labels).inc();
    }
}

/// Counts the requests of the service it wraps ([`RestMetrics::layer`]).
#[derive(Clone, Debug)]
pub struct RestLayer {
    metrics: RestMetrics,
    host: Arc<str>,
}

impl<S> Layer<S> for RestLayer {
    type Service = Counted<S>;

    fn layer(&self, inner: S) -> Counted<S> {
        Counted {
            inner,
            layer: self.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Counted<S> {
    inner: S,
    layer: RestLayer,
}

/// A watch, which client-go does not time: `watch=true` or `watch=1` in the query.
fn is_watch(uri: &Uri) -> bool {
    uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair == "watch=true" || pair == "watch=1")
    })
}

impl<S, In, Out> Service<Request<In>> for Counted<S>
where
    S: Service<Request<In>, Response = Response<Out>>,
    S::Future: Send + 'static,
    Out: Body + Unpin,
{
    type Response = Response<Timed<Out>>;
    type Error = S::Error;
    type Future = BoxFuture<'static, Result<Self::Response, S::Error>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), S::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<In>) -> Self::Future {
        let method = request.method().clone();
        let timer = (!is_watch(request.uri())).then(|| Timer {
            started: Instant::now(),
            durations: self.layer.metrics.durations.clone(),
            labels: DurationLabels {
                verb: method.as_str().to_string(),
                host: self.layer.host.clone(),
            },
        });
        let (metrics, host) = (self.layer.metrics.clone(), self.layer.host.clone());
        let answer = self.inner.call(request);
        Box::pin(async move {
            match answer.await {
                Ok(response) => {
                    metrics.count(response.status().as_str().to_string(), &method, &host);
                    Ok(response.map(|body| Timed { body, timer }))
                }
                Err(e) => {
                    metrics.count("<error>".to_string(), &method, &host);
                    drop(timer);
                    Err(e)
                }
            }
        })
    }
}

/// Observes a request's duration once, when dropped.
struct Timer {
    started: Instant,
    durations: Histograms,
    labels: DurationLabels,
}

impl Drop for Timer {
    fn drop(&mut self) {
        let took = self.started.elapsed().as_secs_f64();
        self.durations.get_or_create(&self.labels).observe(took);
    }
}

/// An answer's body, timing its request until it is read to its end (or dropped).
pub struct Timed<B> {
    body: B,
    timer: Option<Timer>,
}

impl<B: Body + Unpin> Body for Timed<B> {
    type Data = B::Data;
    type Error = B::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<B::Data>, B::Error>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        if matches!(polled, Poll::Ready(None | Some(Err(_)))) {
            this.timer = None;
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;
    use std::future::Ready;

    use http_body_util::{BodyExt, Full};

    /// An API server answering every request with `status`.
    #[derive(Clone)]
    struct Answer(u16);

    impl Service<Request<()>> for Answer {
        type Response = Response<Full<bytes::Bytes>>;
        type Error = Infallible;
        type Future = Ready<Result<Self::Response, Infallible>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Infallible>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, _: Request<()>) -> Self::Future {
            let mut response = Response::new(Full::new(bytes::Bytes::from_static(b"{}")));
            *response.status_mut() = http::StatusCode::from_u16(self.0).unwrap();
            std::future::ready(Ok(response))
        }
    }

    async fn send(service: &mut Counted<Answer>, method: Method, uri: &str) {
        let request = Request::builder().method(method).uri(uri).body(()).unwrap();
        let response = service.call(request).await.unwrap();
        response.into_body().collect().await.unwrap();
    }

    #[tokio::test]
    async fn counts_requests_by_code_method_and_host_and_times_all_but_watches() {
        let mut registry = Registry::default();
        let metrics = RestMetrics::register(&mut registry);
        let layer = metrics.layer(&"https://127.0.0.1:6443".parse().unwrap());
        let mut ok = layer.layer(Answer(200));
        let mut conflict = layer.layer(Answer(409));
        send(&mut ok, Method::GET, "/api/v1/pods").await;
        send(
            &mut ok,
            Method::GET,
            "/api/v1/pods?watch=true&resourceVersion=1",
        )
        .await;
        send(&mut conflict, Method::PUT, "/apis/kubeflow.org/v1/x/status").await;
        let mut text = String::new();
        prometheus_client::encoding::text::encode(&mut text, &registry).unwrap();
        let host = r#"host="127.0.0.1:6443""#;
        for line in [
            format!(r#"rest_client_requests_total{{code="200",method="GET",{host}}} 2"#),
            format!(r#"rest_client_requests_total{{code="409",method="PUT",{host}}} 1"#),
            format!(r#"rest_client_request_duration_seconds_count{{verb="GET",{host}}} 1"#),
            format!(r#"rest_client_request_duration_seconds_count{{verb="PUT",{host}}} 1"#),
        ] {
            assert!(text.contains(&line), "{line} missing:\n{text}");
        }
    }

    #[test]
    fn a_watch_is_told_by_its_query() {
        assert!(is_watch(&"/api/v1/pods?watch=true".parse().unwrap()));
        assert!(is_watch(
            &"/api/v1/pods?labelSelector=a&watch=1".parse().unwrap()
        ));
        assert!(!is_watch(&"/api/v1/pods?watch=false".parse().unwrap()));
        assert!(!is_watch(&"/api/v1/pods".parse().unwrap()));
    }
}
