//! Every path that could give a job its restart budget back, or run a failed job again
//! (docs/behaviour.md §6.4, §6.7): none does. A failed job stays failed when its pods are
//! garbage-collected and as its TTL nears; a resumed job keeps its counts; a whole-job
//! restart keeps `activeDeadlineSeconds` counting from the job's start; uncharged restarts
//! leave the charged count as it was.

use super::*;
use crate::crd::settings::RESTART_SCOPE;

scenario_group!(cases);

const WHOLE: (&str, &str) = (RESTART_SCOPE, "Job");

/// A job that failed at `at(0)` on its backoff limit, after 3 restarts (attempt 3 when
/// restarted whole), with `ttl` and every pod and service gone.
fn failed_job(ttl: Option<i32>, whole: bool) -> TFJob {
    let j = with_policy(job("j", &[(Worker, 2, OnFailure)]), |r| {
        r.backoff_limit = Some(3);
        r.ttl_seconds_after_finished = ttl;
    });
    let mut s = status(
        &[
            CREATED,
            (Running, false, "TFJobFailed"),
            (Failed, true, "TFJobFailed"),
        ],
        true,
    );
    s.completion_time = Some(Time(at(0)));
    s.replica_statuses.entry(Worker).or_default().restarts = Some(3);
    if whole {
        s.restart_attempt = Some(3);
        s.restart_time = Some(Time(at(-60)));
    }
    let j = with_status(j, s);
    if whole { annotated(j, &[WHOLE]) } else { j }
}

/// The case's expectations, and nothing created or deleted, the status kept as stored.
fn untouched(c: Case) -> Case {
    let expect = Expect {
        create_pods: Some(vec![]),
        create_services: Some(vec![]),
        delete_pods: Some(vec![]),
        status_kept: true,
        ..c.expect
    };
    Case { expect, ..c }
}

fn cases() -> Vec<Case> {
    let gc = untouched(case(
        "failed, its pods garbage-collected: nothing created, counts kept",
        failed_job(None, false),
        vec![],
        at(3600),
        Expect {
            restarts: vec![(Worker, Some(3))],
            conditions: Some(ended(Failed, "TFJobFailed")),
            ..Default::default()
        },
    ));
    let whole_gc = untouched(case(
        "failed after whole-job restarts, every attempt's pods gone: nothing created",
        failed_job(None, true),
        vec![],
        at(3600),
        Expect {
            restart_attempt: Some(Some(3)),
            restarts: vec![(Worker, Some(3))],
            ..Default::default()
        },
    ));
    let ttl_nears = untouched(case(
        "failed, the TTL nears: a wake-up at the TTL, nothing created",
        failed_job(Some(600), false),
        vec![],
        at(599),
        Expect {
            requeue_at: Some(Some(at(600))),
            ..Default::default()
        },
    ));
    let ttl_due = untouched(case(
        "failed, the TTL due: the job is deleted, nothing created",
        failed_job(Some(600), false),
        vec![],
        at(600),
        Expect {
            delete_job: true,
            ..Default::default()
        },
    ));
    let mut suspended = status(
        &[
            CREATED,
            (Running, false, "TFJobSuspended"),
            (Suspended, true, "TFJobSuspended"),
        ],
        true,
    );
    let w = suspended.replica_statuses.entry(Worker).or_default();
    w.restarts = Some(2);
    w.uncharged_restarts = Some(1);
    suspended.restart_attempt = Some(2);
    let resumed = annotated(
        with_status(
            with_policy(job("j", &[(Worker, 2, ExitCode)]), |r| {
                r.suspend = Some(false)
            }),
            suspended,
        ),
        &[WHOLE],
    );
    let resume = case(
        "resumed: the counts and the attempt are kept; only the clock restarts",
        resumed,
        vec![],
        at(20),
        Expect {
            restarts: vec![(Worker, Some(2))],
            restart_attempt: Some(Some(2)),
            start_time: Some(Some(at(20))),
            extra: Some(|p: &Plan| {
                let s = p.status.as_ref().unwrap();
                assert_eq!(s.replica_statuses[&Worker].uncharged_restarts, Some(1));
                for pod in &p.create_pods {
                    let labels = pod.metadata.labels.as_ref().unwrap();
                    assert_eq!(labels["tfjob-operator.dev/restart-attempt"], "2");
                }
            }),
            ..Default::default()
        },
    );
    // Restarted whole at 50 s, `activeDeadlineSeconds: 60` from the start at 0 s.
    let mut s = status(&[CREATED, (Restarting, true, "TFJobRestarting")], true);
    s.restart_attempt = Some(1);
    s.restart_time = Some(Time(at(50)));
    s.replica_statuses.entry(Worker).or_default().restarts = Some(1);
    let restarted = annotated(
        with_status(
            with_policy(job("j", &[(Worker, 2, ExitCode)]), |r| {
                r.active_deadline_seconds = Some(60)
            }),
            s,
        ),
        &[WHOLE],
    );
    let before = case(
        "a whole-job restart does not reset activeDeadlineSeconds: the wake-up stays at start + 60",
        restarted.clone(),
        vec![],
        at(55),
        Expect {
            requeue_at: Some(Some(at(60))),
            ..Default::default()
        },
    );
    let deadline = case(
        "and at start + 60 the job fails on its deadline, 10 s into its second attempt",
        restarted,
        vec![],
        at(60),
        Expect {
            conditions: Some(vec![
                CREATED,
                (Restarting, false, "TFJobFailed"),
                (Failed, true, "TFJobFailed"),
            ]),
            last_message: Some(
                "Job j has failed because it was active longer than specified deadline".into(),
            ),
            ..Default::default()
        },
    );
    vec![gc, whole_gc, ttl_nears, ttl_due, resume, before, deadline]
}
