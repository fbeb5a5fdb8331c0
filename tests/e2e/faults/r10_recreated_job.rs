//! R10: a job deleted and created again under the same name while the old job's children are
//! still terminating (held by a finalizer, as a slow garbage collector or kubelet would): the
//! new job never counts, adopts or deletes them, and gets its own children once they are gone.

use std::collections::BTreeMap;
use std::time::Duration;

use k8s_openapi::api::core::v1::{Pod, Service};
use kube::api::{DeleteParams, ListParams, Patch, PatchParams};
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType, TFJob};
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line};
use crate::support::faults::{WatchLog, breakdown, cluster, seed, shared, writes_of};

const HOLD: &str = "faults.tfjob.dev/hold";

fn owners(meta: &kube::api::ObjectMeta) -> Vec<String> {
    meta.owner_references
        .iter()
        .flatten()
        .map(|o| o.uid.clone())
        .collect()
}

/// Name → (uid, owner uids, terminating) of the pods and services that exist.
async fn children(
    c: &crate::support::TestCluster,
) -> BTreeMap<String, (String, Vec<String>, bool)> {
    let lp = ListParams::default();
    let mut out = BTreeMap::new();
    for p in c.pods().list(&lp).await.unwrap().items {
        let m = p.metadata;
        let entry = (
            m.uid.clone().unwrap_or_default(),
            owners(&m),
            m.deletion_timestamp.is_some(),
        );
        out.insert(format!("pod/{}", m.name.unwrap_or_default()), entry);
    }
    for s in c.services().list(&lp).await.unwrap().items {
        let m = s.metadata;
        let entry = (
            m.uid.clone().unwrap_or_default(),
            owners(&m),
            m.deletion_timestamp.is_some(),
        );
        out.insert(format!("service/{}", m.name.unwrap_or_default()), entry);
    }
    out
}

/// Job `same` (a PS and two workers) runs; the test puts a finalizer on its pods and services
/// and deletes the job, so its children linger terminating; a new job `same` is created. For
/// 3 s the new job counts none of them (no Running, no active pod, no restart), adopts none
/// (their owner stays the old uid) and the operator deletes none of them. Once the test
/// removes the finalizers and they are gone, the new job gets its own children (owned by its
/// uid) and succeeds with no restart counted, never Restarting.
#[tokio::test]
async fn a_job_recreated_under_the_same_name_never_counts_adopts_or_deletes_its_predecessors_children()
 {
    let _shared = shared().await;
    let c = cluster("same-name", seed("same-name")).await;
    let jobs = WatchLog::<TFJob>::start(c.jobs(), "").await;
    let _pods = WatchLog::<Pod>::start(c.pods(), "").await;
    let _svcs = WatchLog::<Service>::start(c.services(), "").await;
    let operator = c.operator(&[]).await;
    let mut old = spec(
        "same",
        &[("PS", 1, "Never"), ("Worker", 2, "Never")],
        3600.0,
    );
    old["spec"]["successPolicy"] = json!("AllWorkers");
    let old_uid = c.create(old).await.metadata.uid.unwrap();
    let running = |j: Option<&TFJob>| {
        j.filter(|j| is(j, ConditionType::Running) && common::counts(j, ReplicaType::Worker).0 == 2)
            .cloned()
    };
    crate::support::until(&c.jobs(), "same", "old job running", running).await;

    let hold = Patch::Merge(json!({"metadata": {"finalizers": [HOLD]}}));
    let pp = PatchParams::default();
    let names = ["same-ps-0", "same-worker-0", "same-worker-1"];
    for name in names {
        c.pods().patch(name, &pp, &hold).await.unwrap();
        c.services().patch(name, &pp, &hold).await.unwrap();
    }
    c.jobs()
        .delete("same", &DeleteParams::background())
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let gone = c.jobs().get_opt("same").await.unwrap().is_none();
        let kids = children(&c).await;
        if gone && kids.len() == 6 && kids.values().all(|(_, _, terminating)| *terminating) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the old job's children never started terminating: {kids:#?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let old_children = children(&c).await;

    let counted = c.sim.as_ref().map(|s| s.requests());
    let mut new = spec("same", &[("PS", 1, "Never"), ("Worker", 2, "Never")], 1.0);
    new["spec"]["successPolicy"] = json!("AllWorkers");
    common::annotate(&mut new, "PS", common::RUN, "3600");
    let new_uid = c.create(new).await.metadata.uid.unwrap();
    tokio::time::sleep(Duration::from_secs(3)).await;

    let mut problems = Vec::new();
    let held = children(&c).await;
    if held != old_children {
        problems.push(format!(
            "the old children changed while held: {old_children:#?} became {held:#?}"
        ));
    }
    let job = c.jobs().get("same").await.unwrap();
    let counted_any = is(&job, ConditionType::Running)
        || ReplicaType::ALL.iter().any(|t| {
            let (active, succeeded, failed) = common::counts(&job, *t);
            active + succeeded + failed > 0 || restarts(&job, *t) > 0
        });
    if counted_any {
        problems.push(format!(
            "the new job counted the old children: {}",
            status_line(&job)
        ));
    }
    if let (Some(sim), Some(counted)) = (c.sim.as_ref(), counted.as_ref()) {
        let wrote = writes_of(&sim.requests().since(counted), operator.agent());
        let deletes =
            wrote.count(Some("delete"), None) + wrote.count(Some("deletecollection"), None);
        if deletes > 0 {
            problems.push(format!("the operator sent deletes: {}", breakdown(&wrote)));
        }
    }

    let release = Patch::Merge(json!({"metadata": {"finalizers": null}}));
    for name in names {
        c.pods().patch(name, &pp, &release).await.unwrap();
        c.services().patch(name, &pp, &release).await.unwrap();
    }
    let finished = common::jobs_within(&c, Duration::from_secs(30), |all| {
        all.iter().all(common::finished)
    })
    .await;
    match finished {
        Ok(all) => {
            let job = &all[0];
            let ok = is(job, ConditionType::Succeeded)
                && ReplicaType::ALL.iter().all(|t| restarts(job, *t) == 0)
                && common::counts(job, ReplicaType::Worker).1 == 2;
            if !ok {
                problems.push(format!("the new job ended {}", status_line(job)));
            }
        }
        Err(all) => problems.push(format!(
            "the new job did not finish within 30 s of the release: {}",
            all.first().map(status_line).unwrap_or_default()
        )),
    }
    let now = children(&c).await;
    for (name, (uid, owners, _)) in &now {
        let was = old_children.get(name).map(|(u, _, _)| u);
        if was == Some(uid) || *owners != [new_uid.clone()] {
            problems.push(format!(
                "{name} (uid {uid}) is not the new job's own: owners {owners:?}"
            ));
        }
    }
    let restarting = jobs.with(|all| {
        all.iter()
            .filter(|v| v.uid() == new_uid && is(&v.obj, ConditionType::Restarting))
            .count()
    });
    if restarting > 0 {
        problems.push(format!(
            "{restarting} versions of the new job were Restarting"
        ));
    }
    assert_ne!(old_uid, new_uid);
    assert!(
        problems.is_empty(),
        "{} problems: {problems:#?}",
        problems.len()
    );
}
