//! Acting only on a complete view (issue item 1): a restarted operator whose lists page slowly
//! writes nothing; a child that vanished while the watches were down wakes its job after the
//! relist.

use std::collections::BTreeMap;
use std::time::Duration;

use kube::api::DeleteParams;
use serde_json::json;
use tfjob_operator::crd::{ConditionType, ReplicaType};
use tfjob_sim::FaultRule;
use tokio::time::Instant;

use super::common::{self, is, restarts, spec, status_line, summarize, until_jobs, until_quiet};
use crate::support::TestCluster;
use crate::support::faults::{
    breakdown, cluster, requests_of, seed, shared, sim_options, writes_of,
};
use tfjob_sim::Options;

const JOBS: usize = 200;
const WORKERS: i32 = 3;

/// 200 running jobs of 3 workers (600 pods, 600 services), the operator stopped, its listing
/// made slow (pods slowest, so TFJobs and services are listed first), a new operator started:
/// it has nothing to do, so it writes nothing, and no job's status changes (no restart counted
/// for a pod its cache had not listed yet). Here the listing is a streaming list whose initial
/// events come 500 at a time, with a pause before each batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_with_600_pods_and_a_slow_streaming_list_writes_nothing_and_changes_no_status()
 {
    restarted_with_slow_listing("restart-full-cache", true).await;
}

/// The same on a server that refuses streaming lists (Kubernetes 1.33's default): the operator
/// falls back to lists in pages of 500, and the pages are slow.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_operator_with_600_pods_and_slow_list_pages_writes_nothing_and_changes_no_status()
 {
    restarted_with_slow_listing("restart-full-cache-paged", false).await;
}

async fn restarted_with_slow_listing(test: &str, streaming: bool) {
    let _shared = shared().await;
    let options = Options {
        streaming_lists: streaming,
        ..sim_options(seed(test))
    };
    let c = TestCluster::without_operator_on(test, options).await;
    if !c.simulated() {
        return eprintln!("skipped: slows list pages and counts requests (simulator only)");
    }
    let sim = c.sim();
    let started = Instant::now();
    let first = c.operator(&[]).await;
    let specs = (0..JOBS)
        .map(|i| {
            spec(
                &format!("full-{i:03}"),
                &[("Worker", WORKERS, "Never")],
                3600.0,
            )
        })
        .collect();
    common::create_all(&c, specs, 16).await;
    let running = |j: &tfjob_operator::crd::TFJob| {
        is(j, ConditionType::Running) && common::counts(j, ReplicaType::Worker).0 == WORKERS
    };
    until_jobs(
        &c,
        "every job Running with all workers active",
        Duration::from_secs(120),
        |jobs| jobs.len() == JOBS && jobs.iter().all(running),
        |jobs| summarize(jobs, running),
    )
    .await;
    until_quiet(
        &c,
        first.agent(),
        Duration::from_secs(1),
        Duration::from_secs(60),
    )
    .await;
    let before: BTreeMap<String, serde_json::Value> = common::list_jobs(&c)
        .await
        .iter()
        .map(|j| {
            (
                common::name(j).to_string(),
                json!([j.metadata.resource_version, j.status]),
            )
        })
        .collect();
    eprintln!("{JOBS} jobs running after {:?}", started.elapsed());
    first.stop_cleanly().await;

    sim.set_fault(FaultRule::latency(
        Some("list"),
        Some("tfjobs"),
        Duration::from_millis(300),
    ));
    sim.set_fault(FaultRule::latency(
        Some("list"),
        Some("services"),
        Duration::from_millis(100),
    ));
    sim.set_fault(FaultRule::latency(
        Some("list"),
        Some("pods"),
        Duration::from_millis(500),
    ));
    let counted = sim.requests();
    let streamed = sim.streamed_lists();
    let second = c.operator(&[]).await;
    second.until_ready().await;
    // Late work would come from the first reconciles: give them time to show.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let requests = requests_of(&sim.requests().since(&counted), second.agent());
    let writes = writes_of(&requests, second.agent());
    let after = common::list_jobs(&c).await;
    sim.clear_faults();

    // The listing the test meant to slow is the one that happened: streamed (tfjobs, pods
    // and services, one request each), or paged (more than one page of pods).
    let streamed = sim.streamed_lists() - streamed;
    if streaming {
        assert!(
            streamed == 3 && requests.count(Some("list"), None) == 3,
            "expected three streaming lists and no other list, got {streamed} streamed: {}",
            breakdown(&requests)
        );
    } else {
        assert!(
            streamed == 0 && requests.count(Some("list"), Some("pods")) >= 3,
            "the pod list was not paged after a refused streaming list: {}",
            breakdown(&requests)
        );
    }
    let changed: Vec<String> = after
        .iter()
        .filter(|j| {
            before.get(common::name(j)) != Some(&json!([j.metadata.resource_version, j.status]))
        })
        .map(|j| format!("{}: {}", common::name(j), status_line(j)))
        .collect();
    assert!(
        writes.writes() == 0 && changed.is_empty(),
        "the restarted operator made {} writes {} and changed the status of {} of {JOBS} jobs, e.g. {:#?}",
        writes.writes(),
        breakdown(&writes),
        changed.len(),
        &changed[..changed.len().min(5)]
    );
    second.stop_cleanly().await;
}

/// A running job's only pod and service are deleted while the operator's pod and service
/// watches fail, and the watch history is compacted meanwhile: the re-watch gets 410 and the
/// operator re-lists, which shows the children gone without any deletion event. The job must
/// still be woken: both are recreated, and the restart is counted once.
#[tokio::test]
async fn a_child_deleted_while_the_watches_were_down_is_recreated_after_the_relist() {
    let _shared = shared().await;
    let c = cluster("relist-wakes", seed("relist-wakes")).await;
    if !c.simulated() {
        return eprintln!("skipped: breaks the simulator's watches (simulator only)");
    }
    let sim = c.sim();
    let operator = c.operator(&[]).await;
    c.create(spec("lone", &[("Worker", 1, "Never")], 3600.0))
        .await;
    let (pod, svc) = ("lone-worker-0", "lone-worker-0");
    let running = c.until_condition("lone", ConditionType::Running).await;
    let old_pod = c.until_pod_uid(pod, None).await;
    let old_svc = c.services().get(svc).await.unwrap().metadata.uid.unwrap();
    until_quiet(
        &c,
        operator.agent(),
        Duration::from_millis(500),
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(restarts(&running, ReplicaType::Worker), 0);

    for resource in ["pods", "services"] {
        sim.set_fault(FaultRule::error(Some("watch"), Some(resource), 500, 1.0));
    }
    sim.drop_watches();
    tokio::time::sleep(Duration::from_millis(300)).await;
    let now = DeleteParams::default().grace_period(0);
    c.pods().delete(pod, &now).await.unwrap();
    c.services().delete(svc, &now).await.unwrap();
    c.until_gone(&c.pods(), pod, "pod deleted").await;
    c.until_gone(&c.services(), svc, "service deleted").await;
    sim.compact_history();
    tokio::time::sleep(Duration::from_millis(300)).await;
    sim.clear_faults();
    let cleared = sim.requests();

    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let new_pod = c
            .pods()
            .get_opt(pod)
            .await
            .unwrap()
            .and_then(|p| p.metadata.uid);
        let new_svc = c
            .services()
            .get_opt(svc)
            .await
            .unwrap()
            .and_then(|s| s.metadata.uid);
        let job = c.jobs().get("lone").await.unwrap();
        let recreated = new_pod.as_ref().is_some_and(|u| *u != old_pod)
            && new_svc.as_ref().is_some_and(|u| *u != old_svc);
        if recreated && restarts(&job, ReplicaType::Worker) == 1 {
            break;
        }
        if Instant::now() > deadline {
            let since = requests_of(&sim.requests().since(&cleared), operator.agent());
            panic!(
                "15 s after the faults cleared: pod {new_pod:?} (was {old_pod}), service \
                 {new_svc:?} (was {old_svc}), job {}: the vanished children did not wake their \
                 job; the operator's requests since: {}",
                status_line(&job),
                breakdown(&since)
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    until_quiet(
        &c,
        operator.agent(),
        Duration::from_millis(500),
        Duration::from_secs(30),
    )
    .await;
    let job = c.jobs().get("lone").await.unwrap();
    assert_eq!(
        restarts(&job, ReplicaType::Worker),
        1,
        "{}",
        status_line(&job)
    );
}
