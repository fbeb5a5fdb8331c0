//! Success that waits for the evaluator (`tfjob-operator.dev/wait-for-evaluator-seconds`,
//! docs/behaviour.md §7.3): once the chief succeeded, the job runs on for its evaluator alone,
//! up to N seconds after the chief's end.

use super::*;
use crate::crd::settings::WAIT_FOR_EVALUATOR_SECONDS;

scenario_group!(cases);

const PS_JOB: [(ReplicaType, i32, RestartPolicy); 4] = [
    (Chief, 1, ExitCode),
    (Ps, 1, ExitCode),
    (Worker, 2, ExitCode),
    (Evaluator, 1, ExitCode),
];

/// The PS job, its chief done at `at(100)`, the evaluator as `evaluator` builds it, and
/// worker 1 as `worker` does.
fn trained(
    wait: Option<&str>,
    evaluator: fn(&TFJob) -> ChildPod,
    worker: fn(&TFJob) -> ChildPod,
) -> (TFJob, Vec<ChildPod>) {
    let (j, pods) = running_job(&PS_JOB, |j| {
        vec![
            pod(j, Chief, 0).succeeded().finished(100).build(),
            evaluator(j),
            worker(j),
        ]
    });
    let pairs: Vec<(&str, &str)> = wait
        .map(|w| (WAIT_FOR_EVALUATOR_SECONDS, w))
        .into_iter()
        .collect();
    (annotated(j, &pairs), pods)
}

fn running_evaluator(j: &TFJob) -> ChildPod {
    pod(j, Evaluator, 0).running().build()
}

fn worker_done(j: &TFJob) -> ChildPod {
    pod(j, Worker, 1).succeeded().build()
}

fn succeeded_now() -> Expect {
    Expect {
        conditions: Some(ended(Succeeded, "TFJobSucceeded")),
        ..Default::default()
    }
}

fn cases() -> Vec<Case> {
    let (j, pods) = trained(None, running_evaluator, worker_done);
    let without = case(
        "without the opt-in the chief's success is the job's: the evaluator is cut short",
        j,
        pods,
        at(101),
        Expect {
            cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0), (Evaluator, 0)])),
            ..succeeded_now()
        },
    );
    let (j, pods) = trained(Some("600"), running_evaluator, |j| {
        pod(j, Worker, 1).failed(Some(1)).build()
    });
    let waits = case(
        "with it the job runs on for the evaluator, whatever the others do now, until 600 s \
         after the chief",
        j,
        pods,
        at(101),
        Expect {
            conditions: Some(vec![CREATED, RUNNING]),
            events: Some(vec![]),
            create_pods: Some(vec![]),
            delete_pods: Some(vec![]),
            requeue_at: Some(Some(at(700))),
            ..Default::default()
        },
    );
    let (j, pods) = trained(
        Some("600"),
        |j| pod(j, Evaluator, 0).succeeded().build(),
        worker_done,
    );
    let evaluated = case(
        "the evaluator done: the job succeeds and is cleaned up",
        j,
        pods,
        at(300),
        Expect {
            cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0)])),
            ..succeeded_now()
        },
    );
    let (j, pods) = trained(Some("600"), running_evaluator, worker_done);
    let overran = case(
        "past the wait the job succeeds without it, and says so",
        j,
        pods,
        at(700),
        Expect {
            events: Some(vec!["EvaluatorOverran", "TFJobSucceeded"]),
            event_messages: vec![
                "pod j-evaluator-0 still ran 600 s after the job's training succeeded \
                 (tfjob-operator.dev/wait-for-evaluator-seconds): the job succeeds without \
                 waiting more"
                    .into(),
            ],
            cleanup_pods: Some(names("j", &[(Ps, 0), (Worker, 0), (Evaluator, 0)])),
            ..succeeded_now()
        },
    );
    let (j, pods) = trained(
        Some("600"),
        |j| pod(j, Evaluator, 0).failed(Some(1)).build(),
        worker_done,
    );
    let failed = case(
        "an evaluator failing for good while waited for fails the job, as it would before",
        j,
        pods,
        at(200),
        Expect {
            conditions: Some(ended(Failed, "TFJobFailed")),
            last_message: Some(
                "job \"j\" is failing because \"Evaluator\" replica(s) failed.".into(),
            ),
            ..Default::default()
        },
    );
    let (j, pods) = trained(
        Some("600"),
        |j| pod(j, Evaluator, 0).failed(Some(137)).build(),
        worker_done,
    );
    let retried = case(
        "an evaluator killed while waited for is restarted",
        j,
        pods,
        at(200),
        Expect {
            conditions: Some(vec![CREATED, (Restarting, true, "TFJobRestarting")]),
            delete_pods: Some(names("j", &[(Evaluator, 0)])),
            restarts: vec![(Evaluator, Some(1))],
            requeue_at: Some(Some(at(700))),
            ..Default::default()
        },
    );
    vec![without, waits, evaluated, overran, failed, retried]
}
