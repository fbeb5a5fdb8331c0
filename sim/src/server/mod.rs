//! The HTTP/1.1 front end: accepts connections, reads each request body whole, counts and
//! faults requests, routes them to discovery, CRUD and watch handlers (network I/O).
mod crud;
mod discovery;
mod field_validation;
mod patching;
mod respond;
mod route;
mod state;
mod target;
mod watch;

use std::sync::Arc;

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::BodyExt;
use hyper::body::Incoming;
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use crate::kubectl::{self, Kubectl};
use crate::store::ApiError;
use respond::Body;
use route::{OpenApi, Query, Route};
pub(crate) use state::State;

/// Accept connections until `shutdown` flips to true.
pub async fn serve(
    listener: TcpListener,
    state: Arc<State>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    loop {
        let conn = tokio::select! {
            c = listener.accept() => c,
            _ = shutdown.changed() => return,
        };
        let Ok((stream, _)) = conn else { continue };
        let state = state.clone();
        let mut stop = shutdown.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req| handle(state.clone(), req));
            let conn = hyper::server::conn::http1::Builder::new()
                .keep_alive(true)
                .serve_connection(TokioIo::new(stream), svc);
            tokio::select! {
                r = conn => { if let Err(e) = r { tracing::debug!("connection ended: {e}"); } }
                _ = stop.changed() => {}
            }
        });
    }
}

/// Verb and counted resource name ("pods", "pods/status") of a request.
fn classify(method: &Method, route: &Route, q: &Query) -> (&'static str, String) {
    let Route::Resource(p) = route else {
        return ("get", "discovery".into());
    };
    let resource = match &p.sub {
        Some(s) => format!("{}/{s}", p.plural),
        None => p.plural.clone(),
    };
    let verb = match (method.as_str(), p.name.is_some()) {
        ("GET", true) => "get",
        // A streaming list is counted (and faulted) as the list it replaces; the real
        // server's audit log calls it a watch.
        ("GET", false) if q.flag("watch") && q.flag("sendInitialEvents") => "list",
        ("GET", false) if q.flag("watch") => "watch",
        ("GET", false) => "list",
        ("POST", _) => "create",
        ("PUT", _) => "update",
        ("PATCH", _) => "patch",
        ("DELETE", true) => "delete",
        ("DELETE", false) => "deletecollection",
        _ => "other",
    };
    (verb, resource)
}

/// A request of a frozen client: the connection is closed without an answer.
#[derive(Debug, thiserror::Error)]
#[error("request of a frozen client, dropped unanswered")]
struct Unanswered;

async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Unanswered> {
    let (parts, body) = req.into_parts();
    // Always drain the body first: a leftover body would corrupt the next keep-alive request.
    let body: Bytes = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => {
            return Ok(respond::error(&ApiError::bad_request(format!(
                "reading body: {e}"
            ))));
        }
    };
    let route = route::parse(parts.uri.path());
    let query = Query::parse(parts.uri.query());
    let ua = parts
        .headers
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (verb, resource) = classify(&parts.method, &route, &query);
    let is_write = crate::chaos::faults::WRITE_VERBS.contains(&verb);
    // An armed client's writes take turns, so the freeze falls exactly after its N-th.
    let turn = if is_write {
        state.freeze.turn(ua).await
    } else {
        None
    };
    if state.freeze.is_frozen(ua) {
        // A frozen client's request is never carried out nor answered: it waits, and when the
        // test unfreezes, its connection is closed (a killed process's request must not land
        // later; a resumed client sees a broken connection and retries).
        drop(turn);
        state.freeze.wait_thawed(ua).await;
        return Err(Unanswered);
    }
    state.faults.record(verb, &resource, ua);
    let decision = state.faults.decide(verb, &resource);
    let streaming_list = verb == "list" && query.flag("watch");
    if !decision.latency.is_zero() && !streaming_list {
        tokio::time::sleep(decision.latency).await;
    }
    if let Some(e) = decision.error {
        return Ok(respond::error(&e));
    }
    let req = target::Req {
        state: &state,
        method: &parts.method,
        headers: &parts.headers,
        query: &query,
        body,
        page_latency: if streaming_list {
            decision.latency
        } else {
            std::time::Duration::ZERO
        },
    };
    let response = dispatch(&req, route).await;
    if is_write && response.status().is_success() {
        state.freeze.record_write(ua);
    }
    drop(turn);
    match decision.error_after {
        // The request took effect (stored, watch events sent); only the answer is lost.
        Some(e) if response.status().is_success() => Ok(respond::error(&e)),
        _ => Ok(response),
    }
}

async fn dispatch(req: &target::Req<'_>, route: Route) -> Response<Body> {
    let reg = || req.state.store.registry();
    let not_found = || {
        respond::error(&ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        ))
    };
    match route {
        Route::Version => respond::json(200, &discovery::version()),
        Route::Health => respond::text(200, "ok".into()),
        Route::Api => respond::json(200, &discovery::api_versions(&req.state.addr.to_string())),
        Route::Apis => respond::json(200, &discovery::api_group_list(&reg())),
        Route::Group(g) => {
            discovery::api_group(&reg(), &g).map_or_else(not_found, |v| respond::json(200, &v))
        }
        Route::GroupVersion { group, version } => {
            discovery::resource_list(&reg(), &group, &version)
                .map_or_else(not_found, |v| respond::json(200, &v))
        }
        Route::OpenApi(doc) => match Kubectl::built() {
            Some(kubectl) => openapi(req, doc, kubectl),
            None => {
                let what = "the OpenAPI documents (`kubectl apply` reads them)";
                respond::error(&ApiError::new(404, "NotFound", kubectl::left_out(what)))
            }
        },
        Route::Resource(p) => {
            // A deprecated version warns on every request, whatever its answer (the
            // apiextensions handler's deprecation filter), before any other warning.
            let deprecation = req
                .state
                .store
                .lookup(&p.group, &p.version, &p.plural)
                .and_then(|rt| rt.deprecations.get(&p.version).cloned());
            let r = match crud::handle(req, p).await {
                Ok(r) => r,
                Err(e) => respond::error(&e),
            };
            match deprecation {
                Some(w) => respond::with_warning_first(r, &w),
                None => r,
            }
        }
        Route::NotFound => not_found(),
    }
}

/// kubectl's OpenAPI documents: empty, so kubectl finds no schema there and relies on
/// server-side field validation (which the v3 documents declare).
fn openapi(req: &target::Req<'_>, doc: OpenApi, kubectl: Kubectl) -> Response<Body> {
    let reg = req.state.store.registry();
    match doc {
        OpenApi::V2 => {
            let accept = req
                .headers
                .get(header::ACCEPT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("");
            match kubectl.openapi_v2(accept) {
                Some((content_type, body)) => respond::bytes(200, content_type, Bytes::from(body)),
                None => respond::error(&ApiError::new(
                    406,
                    "NotAcceptable",
                    "the server cannot return the OpenAPI v2 document in the requested media type",
                )),
            }
        }
        OpenApi::V3Root => respond::json(
            200,
            &kubectl.openapi_v3_root(&reg, req.state.store.resource_version()),
        ),
        OpenApi::V3(p) => match kubectl.openapi_v3_group_version(&reg, &p) {
            Some(v) => respond::json(200, &v),
            None => respond::error(&ApiError::new(
                404,
                "NotFound",
                "the server could not find the requested resource",
            )),
        },
    }
}
