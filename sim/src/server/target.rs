//! What a resource request addresses (resource, version, namespace, name, subresource), the
//! conversion between stored and served objects, list/watch filters and request-body helpers
//! (pure).
use bytes::Bytes;
use http::{HeaderMap, Method, header};
use serde_json::{Value, json};

use super::route::Query;
use super::state::State;
use crate::kubectl::{self, Kubectl};
use crate::selector::{FieldSelector, LabelSelector};
use crate::store::{ApiError, Conversion, ResourceType, Sub, WriteOptions, events_v1, meta};

/// One request, body already read.
pub struct Req<'a> {
    pub state: &'a State,
    pub method: &'a Method,
    pub headers: &'a HeaderMap,
    pub query: &'a Query,
    pub body: Bytes,
    /// Injected latency a streaming list pays per page's worth of its initial objects, as a
    /// paged list pays it per page (zero for every other request: theirs is paid up front).
    pub page_latency: std::time::Duration,
}

/// The resolved resource a request addresses.
pub struct Target {
    /// As served at the request's path.
    pub rt: ResourceType,
    /// Where its objects are stored (differs for events.k8s.io Events).
    pub st: ResourceType,
    pub version: String,
    pub ns: String,
    pub all_namespaces: bool,
    pub name: Option<String>,
    pub sub: Option<String>,
}

impl Target {
    /// An object as the client sees it at this path.
    pub fn present(&self, obj: &Value) -> Value {
        if self.rt.conversion == Conversion::EventsV1 {
            return events_v1::from_core(obj);
        }
        let mut o = obj.clone();
        o["apiVersion"] = json!(self.rt.api_version(&self.version));
        o
    }
    /// A client's object in stored form.
    pub fn to_storage(&self, obj: Value) -> Value {
        if self.rt.conversion == Conversion::EventsV1 {
            events_v1::to_core(&obj)
        } else {
            obj
        }
    }
    pub fn write_options(&self, q: &Query) -> WriteOptions {
        let sub = if self.sub.as_deref() == Some("status") {
            Sub::Status
        } else {
            Sub::Main
        };
        let version = if self.rt.conversion == Conversion::None {
            self.version.clone()
        } else {
            "v1".into()
        };
        WriteOptions {
            version,
            sub,
            dry_run: q.get("dryRun").is_some(),
            ..Default::default()
        }
    }
    pub fn name(&self) -> &str {
        self.name.as_deref().unwrap_or("")
    }
}

/// Label, field and namespace filter of a list or watch.
pub struct Filter {
    label: Option<LabelSelector>,
    field: Option<FieldSelector>,
    ns: Option<String>,
}

impl Filter {
    pub fn from_query(q: &Query, t: &Target) -> Result<Self, ApiError> {
        let label = q
            .get("labelSelector")
            .map(LabelSelector::parse)
            .transpose()
            .map_err(ApiError::bad_request)?;
        let field = match q.get("fieldSelector") {
            None => None,
            Some(s) => {
                let s = if t.rt.conversion == Conversion::EventsV1 {
                    events_v1::field_selector_to_core(s)
                } else {
                    s.to_string()
                };
                Some(FieldSelector::parse(&s, &t.st.kind).map_err(ApiError::bad_request)?)
            }
        };
        let ns = (!t.all_namespaces && t.rt.namespaced).then(|| t.ns.clone());
        Ok(Self { label, field, ns })
    }
    /// No label or field selector (the namespace is a storage prefix, not a selector).
    pub fn selects_all(&self) -> bool {
        self.label.is_none() && self.field.is_none()
    }
    pub fn matches(&self, obj: &Value) -> bool {
        self.ns
            .as_deref()
            .is_none_or(|ns| meta::namespace(obj) == ns)
            && self
                .label
                .as_ref()
                .is_none_or(|l| l.matches(meta::labels(obj)))
            && self.field.as_ref().is_none_or(|f| f.matches(obj))
    }
}

/// A request for `meta.k8s.io/v1` Table output (`kubectl get`), and the form of each row's
/// object (`includeObject`: None, Metadata by default, or Object).
pub struct TableRequest {
    kubectl: Kubectl,
    include: String,
}

impl TableRequest {
    /// None if the client did not ask for a Table; 406 if Tables are not built in.
    pub fn of(req: &Req<'_>) -> Result<Option<Self>, ApiError> {
        let asked = req
            .headers
            .get(header::ACCEPT)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|a| a.contains("as=Table"));
        if !asked {
            return Ok(None);
        }
        let kubectl = Kubectl::built().ok_or_else(|| {
            let what = "Table output (Accept: ...;as=Table, `kubectl get`)";
            ApiError::new(406, "NotAcceptable", kubectl::left_out(what))
        })?;
        let include = req.query.get("includeObject").unwrap_or("Metadata").into();
        Ok(Some(Self { kubectl, include }))
    }

    /// The Table of `objs` as served at `t`'s path, with `list_meta` as its metadata.
    pub fn render(&self, t: &Target, objs: &[Value], list_meta: Value) -> Value {
        self.kubectl
            .table(&t.rt, &t.version, objs, &self.include, list_meta)
    }
}

pub fn parse_json(body: &[u8]) -> Result<Value, ApiError> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!("couldn't decode the request body as JSON: {e}"))
    })
}
