//! The running controller: the reconcile driver (observe → validate → plan → apply → status),
//! its error policy, and the watches that feed it. I/O at the edges; decisions are in `plan`.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Pod, Service};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, DynamicObject, PostParams};
use kube::runtime::controller::{Action, Config as ControllerConfig, Controller};
use kube::runtime::events::Recorder;
use kube::runtime::reflector::{self, ObjectRef, Store};
use kube::runtime::{WatchStreamExt, watcher};
use kube::{Api, Client, Resource, ResourceExt};

use super::apply::{self, Target};
use super::events::EventLog;
use super::expectations::Expectations;
use super::labels::{LABEL_OPERATOR_NAME, OPERATOR_NAME};
use super::model::{Plan, Settings};
use super::observe::{observe, trim_pod, trim_service};
use super::plan;
use super::unreadable;
use crate::crd::{TFJob, TFJobStatus, validation};
use crate::error::Error;
use crate::metrics::Metrics;

/// State shared by every reconcile of every watched namespace.
pub struct Shared {
    pub client: Client,
    pub settings: Settings,
    pub recorder: Recorder,
    pub metrics: Metrics,
    pub expectations: Expectations,
    pub events: EventLog,
    /// Job uid → (resourceVersion we wrote over, resourceVersion we wrote): a cached job still
    /// at the first is stale, and planning on it would redo what we just did.
    written: Mutex<HashMap<String, (String, String)>>,
    /// Job uid → consecutive failed reconciles, for backoff.
    failures: Mutex<HashMap<String, u32>>,
    pub resource: ApiResource,
}

impl Shared {
    pub fn new(client: Client, settings: Settings, recorder: Recorder, metrics: Metrics) -> Self {
        Self {
            client,
            settings,
            recorder,
            metrics,
            expectations: Expectations::default(),
            events: EventLog::default(),
            written: Mutex::default(),
            failures: Mutex::default(),
            resource: ApiResource::erase::<TFJob>(&()),
        }
    }
}

/// What one namespace's controller reconciles with.
pub struct Context {
    pub shared: Arc<Shared>,
    pub pods: Store<Pod>,
    pub services: Store<Service>,
}

/// Watch `namespace` (None = all) and reconcile its TFJobs until `shutdown` resolves.
/// `on_ready` runs once the child caches have synced.
pub async fn run_scope(
    shared: Arc<Shared>,
    namespace: Option<String>,
    concurrency: u16,
    shutdown: impl std::future::Future<Output = ()> + Send + Sync + 'static,
    on_ready: impl FnOnce() + Send + 'static,
) {
    let client = shared.client.clone();
    let (jobs, pods, services): (Api<DynamicObject>, Api<Pod>, Api<Service>) = match &namespace {
        Some(ns) => (
            Api::namespaced_with(client.clone(), ns, &shared.resource),
            Api::namespaced(client.clone(), ns),
            Api::namespaced(client, ns),
        ),
        None => (
            Api::all_with(client.clone(), &shared.resource),
            Api::all(client.clone()),
            Api::all(client),
        ),
    };
    // Only our children are cached, trimmed to what the planner reads.
    let ours = watcher::Config::default().labels(&format!("{LABEL_OPERATOR_NAME}={OPERATOR_NAME}"));
    let (pod_reader, pod_writer) = reflector::store_shared(1024);
    let (svc_reader, svc_writer) = reflector::store_shared(1024);
    let (Some(pod_events), Some(svc_events)) = (pod_writer.subscribe(), svc_writer.subscribe())
    else {
        tracing::error!("shared stores must offer subscriptions");
        return;
    };
    // kube's shared stores tell their subscribers about applied objects only, never about
    // deleted ones; a child that is gone for good (deleted from outside, or the failed pod
    // this operator deleted) must still wake its job, or nothing recreates it.
    let (gone_tx, gone_rx) = futures::channel::mpsc::unbounded::<ObjectRef<DynamicObject>>();
    let (pod_gone, svc_gone) = (gone_tx.clone(), gone_tx);
    let (pod_owner, svc_owner) = (shared.resource.clone(), shared.resource.clone());
    let pod_watch = watcher(pods, ours.clone())
        .default_backoff()
        .modify(trim_pod)
        .inspect(move |e| {
            if let Ok(watcher::Event::Delete(pod)) = e {
                wake_owner(&pod.metadata, &pod_owner, &pod_gone);
            }
        })
        .reflect_shared(pod_writer);
    let svc_watch = watcher(services, ours)
        .default_backoff()
        .modify(trim_service)
        .inspect(move |e| {
            if let Ok(watcher::Event::Delete(svc)) = e {
                wake_owner(&svc.metadata, &svc_owner, &svc_gone);
            }
        })
        .reflect_shared(svc_writer);
    let drive =
        |s: std::pin::Pin<Box<dyn futures::Stream<Item = _> + Send>>| s.for_each(|_| async {});

    let ctx = Arc::new(Context {
        shared: shared.clone(),
        pods: pod_reader.clone(),
        services: svc_reader.clone(),
    });
    let resource = shared.resource.clone();
    let controller = Controller::new_with(jobs, watcher::Config::default(), resource)
        .owns_shared_stream(pod_events)
        .owns_shared_stream(svc_events)
        .reconcile_on(gone_rx)
        .with_config(ControllerConfig::default().concurrency(concurrency))
        .graceful_shutdown_on(shutdown)
        .run(reconcile, error_policy, ctx)
        .for_each(|result| async move {
            if let Err(e) = result {
                tracing::debug!(error = %e, "reconcile");
            }
        });
    let ready = async move {
        let _ = pod_reader.wait_until_ready().await;
        let _ = svc_reader.wait_until_ready().await;
        on_ready();
        futures::future::pending::<()>().await
    };
    tokio::select! {
        _ = controller => {},
        _ = drive(Box::pin(pod_watch.map(|_| ()))) => {},
        _ = drive(Box::pin(svc_watch.map(|_| ()))) => {},
        _ = ready => {},
    }
}

/// The TFJob controlling the object with `meta`, as a reconcile trigger.
fn controller_ref(meta: &ObjectMeta, job: &ApiResource) -> Option<ObjectRef<DynamicObject>> {
    let owner = meta.owner_references.as_ref()?.iter().find(|o| {
        o.controller == Some(true) && o.kind == job.kind && o.api_version == job.api_version
    })?;
    Some(ObjectRef::new_with(&owner.name, job.clone()).within(meta.namespace.as_deref()?))
}

fn wake_owner(
    meta: &ObjectMeta,
    job: &ApiResource,
    tx: &futures::channel::mpsc::UnboundedSender<ObjectRef<DynamicObject>>,
) {
    if let Some(owner) = controller_ref(meta, job) {
        // Only fails once the controller is gone (shutting down): nothing left to wake.
        let _ = tx.unbounded_send(owner);
    }
}

/// One reconcile pass for one job.
#[tracing::instrument(skip_all, fields(job = %obj.name_any(), namespace = obj.namespace().unwrap_or_default()))]
pub async fn reconcile(obj: Arc<DynamicObject>, ctx: Arc<Context>) -> Result<Action, Error> {
    let started = Instant::now();
    let shared = &ctx.shared;
    let uid = obj.uid().ok_or(Error::MissingMetadata("metadata.uid"))?;
    if obj.meta().deletion_timestamp.is_some() {
        shared.expectations.forget(&uid);
        return Ok(Action::await_change());
    }
    if is_stale(shared, &uid, &obj) {
        return Ok(Action::requeue(Duration::from_millis(100)));
    }
    let now = Timestamp::now();
    let result = match validation::parse_tfjob(serde_json::to_value(&*obj).map_err(|source| {
        Error::Serialize {
            what: "TFJob",
            source,
        }
    })?) {
        Ok(job) => reconcile_job(&ctx, &obj, &job, &uid, now).await,
        Err(problem) => reconcile_unreadable(&ctx, &obj, &uid, &problem.to_string(), now).await,
    };
    shared.metrics.observe_reconcile(started.elapsed());
    if result.is_ok()
        && let Ok(mut f) = shared.failures.lock()
    {
        f.remove(&uid);
    }
    result
}

async fn reconcile_job(
    ctx: &Context,
    obj: &DynamicObject,
    job: &TFJob,
    uid: &str,
    now: Timestamp,
) -> Result<Action, Error> {
    let shared = &ctx.shared;
    let namespace = obj.namespace().unwrap_or_default();
    let name = obj.name_any();
    let observed = observe(
        &namespace,
        &name,
        uid,
        &ctx.pods,
        &ctx.services,
        &shared.expectations,
        now,
    );
    let plan = plan::plan(job, &observed, now, &shared.settings);
    apply_plan(ctx, obj, job.status.as_ref(), uid, plan, now).await
}

async fn apply_plan(
    ctx: &Context,
    obj: &DynamicObject,
    old_status: Option<&TFJobStatus>,
    uid: &str,
    plan: Plan,
    now: Timestamp,
) -> Result<Action, Error> {
    let shared = &ctx.shared;
    let namespace = obj.namespace().unwrap_or_default();
    let job_ref = obj.object_ref(&shared.resource);
    let target = Target {
        pods: Api::namespaced(shared.client.clone(), &namespace),
        services: Api::namespaced(shared.client.clone(), &namespace),
        job_uid: uid,
        job_ref: &job_ref,
        recorder: &shared.recorder,
        expectations: &shared.expectations,
    };
    let deleted = apply::delete_children(&target, &plan.delete_pods, &plan.delete_services).await;
    let created = apply::create_children(&target, plan.create_pods, plan.create_services).await;
    for note in shared.events.fresh(uid, &plan.events, now) {
        apply::record_note(&target, &note).await;
    }
    if let Some(status) = &plan.status {
        write_status(shared, obj, uid, old_status, status).await?;
        count_transitions(&shared.metrics, &namespace, old_status, status);
    }
    if plan.delete_job {
        delete_job(shared, obj).await?;
        shared
            .metrics
            .jobs_deleted
            .get_or_create(&Metrics::job(&namespace))
            .inc();
    }
    deleted?;
    created?;
    Ok(match plan.requeue_at {
        Some(at) => Action::requeue(Duration::try_from(at.duration_since(now)).unwrap_or_default()),
        None => Action::await_change(),
    })
}

/// A TFJob whose spec cannot even be read is failed with the reason, never retried hot.
async fn reconcile_unreadable(
    ctx: &Context,
    obj: &DynamicObject,
    uid: &str,
    problem: &str,
    now: Timestamp,
) -> Result<Action, Error> {
    let current = unreadable::current_status(obj);
    let (status, note) = unreadable::failed_status(current.as_ref(), &obj.name_any(), problem, now);
    let plan = Plan {
        status: Some(status),
        events: vec![note],
        ..Plan::default()
    };
    apply_plan(ctx, obj, current.as_ref(), uid, plan, now).await
}

/// Write the status through the status subresource, only when it changed. The write carries
/// the resourceVersion it was computed from: a concurrent change answers 409 and we replan.
async fn write_status(
    shared: &Shared,
    obj: &DynamicObject,
    uid: &str,
    old: Option<&TFJobStatus>,
    new: &TFJobStatus,
) -> Result<(), Error> {
    if old == Some(new) || (old.is_none() && *new == TFJobStatus::default()) {
        return Ok(());
    }
    let name = obj.name_any();
    let mut updated = obj.clone();
    updated.data["status"] = serde_json::to_value(new).map_err(|source| Error::Serialize {
        what: "status",
        source,
    })?;
    let api: Api<DynamicObject> = Api::namespaced_with(
        shared.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &shared.resource,
    );
    let written = api
        .replace_status(&name, &PostParams::default(), &updated)
        .await
        .map_err(|source| Error::WriteStatus {
            name: name.clone(),
            source,
        })?;
    if let (Some(before), Some(after), Ok(mut w)) = (
        obj.resource_version(),
        written.resource_version(),
        shared.written.lock(),
    ) {
        w.insert(uid.to_string(), (before, after));
    }
    Ok(())
}

async fn delete_job(shared: &Shared, obj: &DynamicObject) -> Result<(), Error> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        shared.client.clone(),
        &obj.namespace().unwrap_or_default(),
        &shared.resource,
    );
    let name = obj.name_any();
    let params = kube::api::DeleteParams {
        preconditions: obj.uid().map(|uid| kube::api::Preconditions {
            uid: Some(uid),
            resource_version: None,
        }),
        ..kube::api::DeleteParams::background()
    };
    match api.delete(&name, &params).await {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 || s.code == 409 => Ok(()),
        Err(source) => Err(Error::DeleteJob { name, source }),
    }
}

fn is_stale(shared: &Shared, uid: &str, obj: &DynamicObject) -> bool {
    let Ok(mut written) = shared.written.lock() else {
        return false;
    };
    match (written.get(uid), obj.resource_version()) {
        (Some((before, _)), Some(rv)) if *before == rv => true,
        (Some(_), _) => {
            written.remove(uid);
            false
        }
        _ => false,
    }
}

/// Kubeflow's job counters, bumped when a condition turns True.
fn count_transitions(
    metrics: &Metrics,
    namespace: &str,
    old: Option<&TFJobStatus>,
    new: &TFJobStatus,
) {
    use crate::crd::{ConditionStatus, ConditionType};
    let is_true = |s: Option<&TFJobStatus>, t: ConditionType| {
        s.is_some_and(|s| {
            s.conditions
                .iter()
                .any(|c| c.type_ == t && c.status == ConditionStatus::True)
        })
    };
    let labels = Metrics::job(namespace);
    let counters = [
        (ConditionType::Created, &metrics.jobs_created),
        (ConditionType::Succeeded, &metrics.jobs_successful),
        (ConditionType::Failed, &metrics.jobs_failed),
        (ConditionType::Restarting, &metrics.jobs_restarted),
    ];
    for (t, counter) in counters {
        if is_true(Some(new), t) && !is_true(old, t) {
            counter.get_or_create(&labels).inc();
        }
    }
}

/// Retry a failed job with exponential backoff (0.5 s doubling to 5 min); 429 and 5xx from the
/// API server land here too, so an overloaded server is not hammered.
pub fn error_policy(obj: Arc<DynamicObject>, error: &Error, ctx: Arc<Context>) -> Action {
    let uid = obj.uid().unwrap_or_default();
    ctx.shared
        .metrics
        .reconcile_errors
        .get_or_create(&crate::metrics::ErrorLabels {
            error: error.metric_label(),
        })
        .inc();
    let attempts = ctx
        .shared
        .failures
        .lock()
        .map(|mut f| {
            let n = f.entry(uid).or_insert(0);
            *n = n.saturating_add(1);
            *n
        })
        .unwrap_or(1);
    tracing::warn!(error = %error, attempts, "reconcile failed");
    Action::requeue(backoff(attempts))
}

fn backoff(attempts: u32) -> Duration {
    let millis = 500u64.saturating_mul(1u64 << attempts.saturating_sub(1).min(20));
    Duration::from_millis(millis.min(300_000))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_and_caps() {
        let got: Vec<u64> = [1, 2, 3, 10, 30]
            .iter()
            .map(|&a| backoff(a).as_millis() as u64)
            .collect();
        assert_eq!(got, [500, 1000, 2000, 256_000, 300_000]);
    }

    #[test]
    fn a_deleted_child_wakes_the_tfjob_that_controls_it() {
        use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
        let job = ApiResource::erase::<TFJob>(&());
        let owner = |kind: &str, controller: Option<bool>| OwnerReference {
            api_version: "kubeflow.org/v1".into(),
            kind: kind.into(),
            name: "mnist".into(),
            uid: "u1".into(),
            controller,
            block_owner_deletion: None,
        };
        let meta = |owners: Vec<OwnerReference>, ns: Option<&str>| ObjectMeta {
            name: Some("mnist-worker-0".into()),
            namespace: ns.map(Into::into),
            owner_references: Some(owners),
            ..ObjectMeta::default()
        };
        let want = ObjectRef::new_with("mnist", job.clone()).within("ns");
        let cases = [
            (
                "controlled by a TFJob",
                meta(vec![owner("TFJob", Some(true))], Some("ns")),
                Some(want),
            ),
            (
                "owned but not controlled",
                meta(vec![owner("TFJob", None)], Some("ns")),
                None,
            ),
            (
                "controlled by another kind",
                meta(vec![owner("Job", Some(true))], Some("ns")),
                None,
            ),
            ("no owner", meta(vec![], Some("ns")), None),
            (
                "no namespace",
                meta(vec![owner("TFJob", Some(true))], None),
                None,
            ),
        ];
        for (name, meta, want) in cases {
            assert_eq!(controller_ref(&meta, &job), want, "{name}");
        }
    }
}
