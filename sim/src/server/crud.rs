//! Resource requests: get, list (selectors, limit/continue, tables), create, update, delete,
//! deletecollection, pod log and eviction (no I/O besides the response).
use http::{Response, header};
use serde_json::{Value, json};

use super::field_validation::{self, Directive};
use super::respond::{self, Body};
use super::route::ResourcePath;
use super::target::{Filter, Req, TableRequest, Target, parse_json};
use crate::controllers::{disruption, kubelet};
use crate::store::{ApiError, Conversion, DeleteOptions, Deleted, Sub, WriteOptions, meta};

fn resolve(req: &Req<'_>, p: ResourcePath) -> Result<Target, ApiError> {
    let store = &req.state.store;
    let not_found = || {
        ApiError::new(
            404,
            "NotFound",
            "the server could not find the requested resource",
        )
    };
    let rt = store
        .lookup(&p.group, &p.version, &p.plural)
        .ok_or_else(not_found)?;
    if (p.namespace.is_some() && !rt.namespaced)
        || (rt.namespaced && p.namespace.is_none() && p.name.is_some())
    {
        return Err(not_found());
    }
    let st = if rt.conversion == Conversion::None {
        rt.clone()
    } else {
        store.resource_type(&rt.storage).ok_or_else(not_found)?
    };
    let sub_ok = match p.sub.as_deref() {
        None => true,
        Some("status") => rt.has_status,
        Some(s) => rt.subresources.iter().any(|x| x == s),
    };
    if !sub_ok {
        return Err(not_found());
    }
    Ok(Target {
        all_namespaces: p.namespace.is_none(),
        ns: p.namespace.unwrap_or_default(),
        rt,
        st,
        version: p.version,
        name: p.name,
        sub: p.sub,
    })
}

pub async fn handle(req: &Req<'_>, p: ResourcePath) -> Result<Response<Body>, ApiError> {
    let t = resolve(req, p)?;
    let ct = req
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if ct.contains("protobuf") || ct.contains("cbor") {
        // Decoding protobuf needs every built-in type's schema; JSON is what kube-rs and
        // `kubectl apply/patch/delete` send. (`kubectl create <generator>` sends protobuf.)
        return Err(ApiError::unsupported_media(
            "application/json, application/yaml",
        ));
    }
    let sub = t.sub.as_deref();
    match (req.method.as_str(), t.name.is_some(), sub) {
        ("GET", true, Some("log")) => Ok(pod_log(req, &t)),
        ("GET", true, _) => get(req, &t),
        ("GET", false, _) if req.query.flag("watch") => super::watch::watch(req, &t),
        ("GET", false, _) => list(req, &t),
        ("POST", false, _) => create(req, &t),
        ("POST", true, Some("eviction")) => evict(req, &t),
        ("PUT", true, None | Some("status")) => update(req, &t),
        ("PATCH", true, None | Some("status")) => super::patching::patch(req, &t),
        ("DELETE", true, None) => delete(req, &t),
        ("DELETE", false, None) => delete_collection(req, &t),
        _ => Err(ApiError::method_not_allowed()),
    }
}

fn get(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let obj = req
        .state
        .store
        .get(&t.st, &t.ns, t.name())
        .ok_or_else(|| ApiError::not_found(&t.rt.group, &t.rt.plural, t.name()))?;
    let obj = t.present(&obj);
    if let Some(table) = TableRequest::of(req)? {
        let rv = meta::resource_version(&obj).to_string();
        return Ok(respond::json(
            200,
            &table.render(t, &[obj], json!({"resourceVersion": rv})),
        ));
    }
    Ok(respond::json(200, &obj))
}

fn continue_token(obj: &Value) -> String {
    format!("{}\u{1}{}", meta::namespace(obj), meta::name(obj))
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_token(token: &str) -> Result<(String, String), ApiError> {
    let bad = || ApiError::bad_request("invalid continue token");
    let bytes: Result<Vec<u8>, _> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2).unwrap_or("zz"), 16))
        .collect();
    let s = String::from_utf8(bytes.map_err(|_| bad())?).map_err(|_| bad())?;
    let (ns, name) = s.split_once('\u{1}').ok_or_else(bad)?;
    Ok((ns.into(), name.into()))
}

fn list(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let filter = Filter::from_query(req.query, t)?;
    let after = req.query.get("continue").map(decode_token).transpose()?;
    let (items, rv) = req.state.store.list(&t.st, None, |o| {
        filter.matches(o)
            && after.as_ref().is_none_or(|(ns, n)| {
                (meta::namespace(o), meta::name(o)) > (ns.as_str(), n.as_str())
            })
    });
    let limit = req
        .query
        .get("limit")
        .and_then(|l| l.parse::<usize>().ok())
        .filter(|l| *l > 0);
    let mut list_meta = json!({"resourceVersion": rv.to_string()});
    let mut page: Vec<Value> = items
        .iter()
        .take(limit.unwrap_or(usize::MAX))
        .map(|o| t.present(o))
        .collect();
    if let Some(l) = limit
        && items.len() > l
    {
        list_meta["continue"] = json!(continue_token(&items[l - 1]));
        // The storage only counts what is left when no selector filters it (etcd3 `GetList`:
        // a count including objects the selector rejects would be wrong, so it gives none).
        if filter.selects_all() {
            list_meta["remainingItemCount"] = json!(items.len() - l);
        }
    }
    if let Some(table) = TableRequest::of(req)? {
        return Ok(respond::json(200, &table.render(t, &page, list_meta)));
    }
    for o in &mut page {
        // Items of a typed list carry no kind/apiVersion except for custom resources.
        if t.rt.builtin
            && let Some(m) = o.as_object_mut()
        {
            m.remove("kind");
            m.remove("apiVersion");
        }
    }
    let list = json!({
        "kind": format!("{}List", t.rt.kind), "apiVersion": t.rt.api_version(&t.version),
        "metadata": list_meta, "items": page,
    });
    Ok(respond::json(200, &list))
}

/// The request body with the fields its kind does not declare dropped, as the real decoder
/// does, and the warnings to answer with (fields given twice first, then unknown ones, as the
/// real decoder lists them); Err under `fieldValidation=Strict` if any was found.
fn decode_body(req: &Req<'_>, t: &Target, options: &str) -> Result<(Value, Vec<String>), ApiError> {
    let directive = field_validation::directive(req.query, options)?;
    let mut obj = parse_json(&req.body)?;
    let mut strict = field_validation::duplicates(&req.body);
    strict.extend(field_validation::prune_unknown(&t.rt, &t.version, &mut obj));
    if directive == Directive::Strict && !strict.is_empty() {
        return Err(field_validation::decode_error(&t.rt, &t.version, &strict));
    }
    Ok((obj, field_validation::warnings(directive, strict)))
}

fn create(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let (obj, warnings) = decode_body(req, t, "CreateOptions")?;
    let obj = t.to_storage(obj);
    let created = req
        .state
        .store
        .create(&t.st, &t.ns, obj, &t.write_options(req.query))?;
    let r = respond::json(201, &t.present(&created));
    Ok(respond::with_warnings(r, &warnings))
}

fn update(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let (obj, warnings) = decode_body(req, t, "UpdateOptions")?;
    let obj = t.to_storage(obj);
    let (group, plural, name) = (&t.rt.group, &t.rt.plural, t.name());
    let out =
        req.state.store.write(
            &t.st,
            &t.ns,
            name,
            &t.write_options(req.query),
            |cur| match cur {
                None => Err(ApiError::not_found(group, plural, name)),
                Some(_) => Ok(obj),
            },
        )?;
    Ok(respond::with_warnings(
        respond::json(200, &t.present(&out)),
        &warnings,
    ))
}

fn delete_options(req: &Req<'_>) -> Result<DeleteOptions, ApiError> {
    let body = if req.body.iter().all(u8::is_ascii_whitespace) {
        Value::Null
    } else {
        parse_json(&req.body)?
    };
    let mut opts = DeleteOptions::from_body(&body);
    if let Some(p) = req.query.get("propagationPolicy") {
        opts.propagation = Some(p.into());
    }
    if let Some(g) = req
        .query
        .get("gracePeriodSeconds")
        .and_then(|g| g.parse().ok())
    {
        opts.grace_seconds = Some(g);
    }
    opts.dry_run |= req.query.get("dryRun").is_some();
    if let Some(p) = opts.propagation.as_deref()
        && !matches!(p, "Background" | "Foreground" | "Orphan")
    {
        return Err(ApiError::bad_request(format!(
            "propagationPolicy: Unsupported value: \"{p}\""
        )));
    }
    Ok(opts)
}

fn delete(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(req)?;
    match req.state.store.delete(&t.st, &t.ns, t.name(), &opts)? {
        Deleted::Pending(o) => Ok(respond::json(200, &t.present(&o))),
        // Pods answer with the deleted object, other kinds with a success Status (as the real
        // registries do).
        Deleted::Gone(o) if t.rt.plural == "pods" && t.rt.group.is_empty() => {
            Ok(respond::json(200, &t.present(&o)))
        }
        Deleted::Gone(o) => Ok(respond::json(
            200,
            &respond::success_status(&t.rt.group, &t.rt.plural, t.name(), meta::uid(&o)),
        )),
    }
}

fn delete_collection(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let opts = delete_options(req)?;
    let filter = Filter::from_query(req.query, t)?;
    let (items, rv) = req.state.store.list(&t.st, None, |o| filter.matches(o));
    let mut out = Vec::new();
    for o in items {
        match req
            .state
            .store
            .delete(&t.st, meta::namespace(&o), meta::name(&o), &opts)
        {
            Ok(Deleted::Gone(d) | Deleted::Pending(d)) => out.push(t.present(&d)),
            Err(e) if e.code == 404 => {}
            Err(e) => return Err(e),
        }
    }
    let list = json!({"kind": format!("{}List", t.rt.kind), "apiVersion": t.rt.api_version(&t.version),
        "metadata": {"resourceVersion": rv.to_string()}, "items": out});
    Ok(respond::json(200, &list))
}

fn pod_log(req: &Req<'_>, t: &Target) -> Response<Body> {
    let container = req.query.get("container").unwrap_or("");
    respond::text(200, kubelet::sim_log(&t.ns, t.name(), container))
}

fn evict(req: &Req<'_>, t: &Target) -> Result<Response<Body>, ApiError> {
    let body = if req.body.is_empty() {
        Value::Null
    } else {
        parse_json(&req.body)?
    };
    let mut opts = DeleteOptions::from_body(&body["deleteOptions"]);
    // As the registry's eviction does: DisruptionTarget first (under the delete's
    // preconditions), then the delete (its resourceVersion precondition moved to the write).
    if !opts.dry_run {
        let status_write = WriteOptions {
            internal: true,
            sub: Sub::Status,
            ..Default::default()
        };
        let marked = req
            .state
            .store
            .write(&t.st, &t.ns, t.name(), &status_write, |cur| {
                let mut pod = cur
                    .cloned()
                    .ok_or_else(|| ApiError::not_found("", "pods", t.name()))?;
                let uid = opts.precondition_uid.as_deref();
                let rv = opts.precondition_rv.as_deref();
                if uid.is_some_and(|u| u != meta::uid(&pod))
                    || rv.is_some_and(|v| Some(v) != pod["metadata"]["resourceVersion"].as_str())
                {
                    let why = "the delete's precondition does not hold";
                    return Err(ApiError::conflict("", "pods", t.name(), why));
                }
                let now = jiff::Timestamp::now();
                disruption::mark(&mut pod["status"], disruption::EVICTION_API, now);
                Ok(pod)
            })?;
        if opts.precondition_rv.is_some() {
            opts.precondition_rv = marked["metadata"]["resourceVersion"]
                .as_str()
                .map(String::from);
        }
    }
    req.state.store.delete(&t.st, &t.ns, t.name(), &opts)?;
    Ok(respond::json(
        201,
        &json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}),
    ))
}
