//! R12: a running job's pod and service deleted while the operator's child watches were down,
//! for every way a child watch comes back (issue "A service deleted while the child watches
//! were down is sometimes not recreated"): a 410 and a re-list, a resume from its
//! resourceVersion without a 410, one of each side by side, and a re-list still paging while
//! the other watch's resumed stream has already told of its deletion. Each way, several times
//! over in one operator process: the job is woken and both children come back every time.
//!
//! The children the operator recreates are themselves deleted before its watches have shown
//! them: the hole was there. The controller remembered its own creates until its cache showed
//! them, and a child created and deleted while its watch was down never shows: the job was not
//! woken (a re-list does not mention what it never had) or planned on the remembered child
//! (a resumed stream tells of it and of its deletion, and the cache holds no such name), so
//! nothing was recreated for a minute.

use std::time::Duration;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::DeleteParams;
use tfjob_operator::crd::ConditionType;
use tfjob_sim::FaultRule;
use tokio::time::Instant;

use super::common::{spec, status_line, until_quiet};
use crate::support::{TestCluster, until};

use crate::support::faults::{breakdown, cluster, requests_of, seed, shared};

/// How each child watch comes back once its connection is cut.
#[derive(Clone, Copy, Debug)]
enum Return {
    /// Its history is gone: the re-watch gets 410 and the client re-lists.
    Relist,
    /// It resumes from its last resourceVersion and is replayed what it missed.
    Resume,
}

/// One way the watches come back: pods, services, and whether the pods' re-list pages slowly
/// (so the services' resumed stream wakes the job while the pod cache is still re-listing).
#[derive(Clone, Copy, Debug)]
struct Path {
    pods: Return,
    services: Return,
    slow_pod_list: bool,
}

const PATHS: [Path; 5] = [
    Path {
        pods: Return::Relist,
        services: Return::Relist,
        slow_pod_list: false,
    },
    Path {
        pods: Return::Relist,
        services: Return::Resume,
        slow_pod_list: false,
    },
    Path {
        pods: Return::Resume,
        services: Return::Relist,
        slow_pod_list: false,
    },
    Path {
        pods: Return::Resume,
        services: Return::Resume,
        slow_pod_list: false,
    },
    Path {
        pods: Return::Relist,
        services: Return::Resume,
        slow_pod_list: true,
    },
];

/// Rounds per path, all in one operator process: what one round leaves behind (in the caches,
/// the watch trackers, the job's pending-write memory) is what the next round meets.
const ROUNDS: usize = 2;

/// Every path, `ROUNDS` times, each round on a running 1-worker job of its own, all under one
/// operator. Each round: the child watches lag (their events delivered 2 s late), the pod and
/// service are deleted, and the operator recreates both while its watches still show the old
/// ones going; then the watches are cut before they show the new ones, those are deleted too,
/// and the watches come back as the path says. The pod and service must be back within 15 s.
#[tokio::test]
async fn children_deleted_while_the_child_watches_were_down_come_back_whichever_way_the_watches_return()
 {
    let _shared = shared().await;
    let c = cluster("child-watch-paths", seed("child-watch-paths")).await;
    if !c.simulated() {
        return eprintln!("skipped: cuts and compacts the simulator's watches (simulator only)");
    }
    let operator = c.operator(&[]).await;
    let mut failures = Vec::new();
    let mut round = 0;
    for _ in 0..ROUNDS {
        for path in PATHS {
            round += 1;
            let job = format!("paths-{round}");
            c.create(spec(&job, &[("Worker", 1, "Never")], 3600.0))
                .await;
            c.until_condition(&job, ConditionType::Running).await;
            until_quiet(
                &c,
                operator.agent(),
                Duration::from_millis(500),
                Duration::from_secs(30),
            )
            .await;
            if let Err(failure) = round_trip(&c, &job, path, operator.agent()).await {
                failures.push(format!("round {round}, {path:?}: {failure}"));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {round} rounds failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

const CHILDREN: [&str; 2] = ["pods", "services"];

/// The uids of the job's pod and service as the API server has them.
async fn uids(c: &TestCluster, job: &str) -> (Option<String>, Option<String>) {
    let child = format!("{job}-worker-0");
    let pod = c.pods().get_opt(&child).await.ok().flatten();
    let svc = c.services().get_opt(&child).await.ok().flatten();
    (
        pod.and_then(|p| p.metadata.uid),
        svc.and_then(|s| s.metadata.uid),
    )
}

/// Waits up to `within` for a pod and a service other than `old` ones; Err says what is
/// missing and (on the simulator) what the operator asked the API server meanwhile.
async fn until_recreated(
    c: &TestCluster,
    job: &str,
    old: &(Option<String>, Option<String>),
    within: Duration,
    agent: &str,
) -> Result<(Option<String>, Option<String>), String> {
    let since = c.simulated().then(|| c.sim().requests());
    let deadline = Instant::now() + within;
    loop {
        let now = uids(c, job).await;
        let back = |new: &Option<String>, old: &Option<String>| new.is_some() && new != old;
        if back(&now.0, &old.0) && back(&now.1, &old.1) {
            return Ok(now);
        }
        if Instant::now() > deadline {
            let job = c.jobs().get(job).await.map_err(|e| e.to_string())?;
            let asked = since.map(|since| {
                let asked = requests_of(&c.sim().requests().since(&since), agent);
                format!("; the operator's requests meanwhile: {}", breakdown(&asked))
            });
            return Err(format!(
                "after {within:?}: pod recreated {}, service recreated {}, job {}{}",
                back(&now.0, &old.0),
                back(&now.1, &old.1),
                status_line(&job),
                asked.unwrap_or_default()
            ));
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// Deletes the job's pod and service now, and waits until both are gone. Gone means that the
/// objects deleted are: the operator may already have made new ones under the same names
/// (on a real API server it often has by the time the second wait starts).
async fn delete_children(c: &TestCluster, job: &str) -> Result<(), String> {
    let child = format!("{job}-worker-0");
    let (pod, service) = uids(c, job).await;
    let now = DeleteParams::default().grace_period(0);
    let gone = |e: kube::Error| e.to_string();
    c.pods().delete(&child, &now).await.map_err(gone)?;
    c.services().delete(&child, &now).await.map_err(gone)?;
    until(&c.pods(), &child, "the pod deleted", |p| {
        replaced_or_going(p.map(|p| &p.metadata), &pod)
    })
    .await;
    until(&c.services(), &child, "the service deleted", |s| {
        replaced_or_going(s.map(|s| &s.metadata), &service)
    })
    .await;
    Ok(())
}

/// `Some` once the object under a name is no longer the one of uid `old` (or is going).
fn replaced_or_going(now: Option<&ObjectMeta>, old: &Option<String>) -> Option<()> {
    now.is_none_or(|m| m.uid != *old || m.deletion_timestamp.is_some())
        .then_some(())
}

/// One round (see the test): recreated while the watches lag, deleted again while they are
/// down, back as `path` says.
async fn round_trip(c: &TestCluster, job: &str, path: Path, agent: &str) -> Result<(), String> {
    let sim = c.sim();
    let lag = Duration::from_secs(2);
    let first = uids(c, job).await;
    for resource in CHILDREN {
        sim.set_watch_delay(Some(resource), lag, lag);
    }
    delete_children(c, job).await?;
    let recreated = until_recreated(c, job, &first, Duration::from_secs(10), agent)
        .await
        .map_err(|e| format!("first recreation (watches lagging): {e}"))?;
    for resource in CHILDREN {
        sim.set_fault(FaultRule::error(Some("watch"), Some(resource), 500, 1.0));
    }
    sim.drop_watches_of(&CHILDREN);
    delete_children(c, job).await?;
    let relisted: Vec<&str> = [("pods", path.pods), ("services", path.services)]
        .into_iter()
        .filter(|(_, r)| matches!(r, Return::Relist))
        .map(|(plural, _)| plural)
        .collect();
    sim.compact_history_of(&relisted);
    sim.clear_watch_delays();
    sim.clear_faults();
    if path.slow_pod_list {
        sim.set_fault(FaultRule::latency(
            Some("list"),
            Some("pods"),
            Duration::from_millis(1500),
        ));
    }
    let outcome = until_recreated(c, job, &recreated, Duration::from_secs(15), agent)
        .await
        .map(|_| ());
    sim.clear_faults();
    outcome
}

/// Rounds of the real API server's version of the scenario.
const REAL_ROUNDS: usize = 3;

/// The scenario on a real API server, as far as it can be provoked there: a running job's pod
/// is deleted, etcd compacts its history and kube-apiserver restarts (every watch drops; the
/// new watch cache cannot resume them: 410, re-list), and the service is deleted as the
/// watches come back. Both must be recreated; and the recreated pair, deleted again at once
/// (very likely before the operator's watches have shown it), must be recreated too.
///
/// It restarts the API server under every other test, so it runs only when
/// `TFJOB_E2E_DISRUPT=1`: `testcluster/e2e` runs it alone after the suite.
#[tokio::test]
async fn on_a_real_api_server_children_deleted_around_a_compaction_and_restart_come_back() {
    let _shared = shared().await;
    let c = cluster("apiserver-restart", seed("apiserver-restart")).await;
    if c.simulated() {
        return eprintln!("skipped: restarts a real API server (the real tier only)");
    }
    if std::env::var("TFJOB_E2E_DISRUPT").as_deref() != Ok("1") {
        return eprintln!(
            "skipped: restarts the API server under the other tests; testcluster/e2e runs it \
             alone with TFJOB_E2E_DISRUPT=1"
        );
    }
    let _operator = c.operator(&[]).await;
    let mut failures = Vec::new();
    for round in 1..=REAL_ROUNDS {
        let job = format!("restart-{round}");
        c.create(spec(&job, &[("Worker", 1, "Never")], 3600.0))
            .await;
        c.until_condition(&job, ConditionType::Running).await;
        let child = format!("{job}-worker-0");
        let first = uids(&c, &job).await;
        let now = DeleteParams::default().grace_period(0);
        let steps = async {
            c.pods()
                .delete(&child, &now)
                .await
                .map_err(|e| e.to_string())?;
            chaos("compact")?;
            chaos("restart-apiserver")?;
            c.services()
                .delete(&child, &now)
                .await
                .map_err(|e| e.to_string())?;
            let recreated = until_recreated(&c, &job, &first, Duration::from_secs(30), "")
                .await
                .map_err(|e| format!("after the restart: {e}"))?;
            delete_children(&c, &job).await?;
            until_recreated(&c, &job, &recreated, Duration::from_secs(30), "")
                .await
                .map_err(|e| format!("deleted again at once: {e}"))
        };
        if let Err(failure) = steps.await {
            failures.push(format!("round {round}: {failure}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Runs `testcluster/chaos <what>` on the test cluster.
fn chaos(what: &str) -> Result<(), String> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/testcluster/chaos");
    let out = std::process::Command::new(script)
        .arg(what)
        .output()
        .map_err(|e| format!("{script}: {e}"))?;
    match out.status.success() {
        true => Ok(()),
        false => Err(format!(
            "testcluster/chaos {what}: {}",
            String::from_utf8_lossy(&out.stderr)
        )),
    }
}
